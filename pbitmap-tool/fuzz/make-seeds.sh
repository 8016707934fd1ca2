#!/bin/bash
# Regenerate the fuzz seeds in pbitmap-tool/fuzz/seeds/ (each < 20 KB):
#   elf64-stamped      a tiny static x86-64 program, stamped, a few pages marked
#   elf32-stamped      the same, 32-bit
#   elf64-plain        the tiny program, not stamped
#   elf64-interrupted  a stamp killed after writing its tail (needs the ASan
#                      build, which has PBITMAP_FAULT)
#   record-raw         the bare record of elf64-stamped
#   xattr-value        a user.pbitmap attribute value (zstd-compressed record)
#   marker-value       the user.pbitmap marker of elf64-stamped (32 bytes; its
#                      CRC is out of the fuzzer's reach without a seed)
#   profile-elf64      `pbitmap export` of elf64-stamped (sections only)
#   profile-true       `pbitmap export` of a stamped /usr/bin/true, pages
#                      0,2-4,6 marked (sections, functions)
#   profile-data       `pbitmap export` of a data file, 8 KiB marked
# Usage: pbitmap-tool/fuzz/make-seeds.sh [PBITMAP]   (default build/asan/pbitmap)
# Needs gcc with -m32 support and a filesystem with user xattrs for TMPDIR.
set -eu -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
pb=${1:-$top/build/asan/pbitmap}
out=$top/pbitmap-tool/fuzz/seeds
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

cat >"$t/t64.c" <<'EOF'
void _start(void)
{
	__asm__ volatile("mov $60, %eax\n\tmov $0, %edi\n\tsyscall");
	__builtin_unreachable();
}
EOF
cat >"$t/t32.c" <<'EOF'
void _start(void)
{
	__asm__ volatile("mov $1, %eax\n\tmov $0, %ebx\n\tint $0x80");
	__builtin_unreachable();
}
EOF
gcc -Os -nostdlib -static -Wl,--build-id=none -o "$t/elf64-plain" "$t/t64.c"
gcc -m32 -Os -nostdlib -static -Wl,--build-id=none -o "$t/elf32-stamped" "$t/t32.c"
cp "$t/elf64-plain" "$t/elf64-stamped"
cp "$t/elf64-plain" "$t/elf64-interrupted"
"$pb" add -q "$t/elf64-stamped" "$t/elf32-stamped"
"$pb" set --pages 0,2 "$t/elf64-stamped" "$t/elf32-stamped"
"$pb" set --pages 1 --plane 1 "$t/elf64-stamped"
{ PBITMAP_FAULT=tail-written "$pb" add "$t/elf64-interrupted"; } 2>/dev/null || true   # SIGKILLed

read -r off size < <(python3 "$top/tests/elfcheck.py" record "$t/elf64-stamped")
tail -c +$((off + 1)) "$t/elf64-stamped" | head -c "$size" >"$t/record-raw"

head -c 100000 /dev/urandom >"$t/data"
"$pb" add -q "$t/data"
"$pb" set --ranges 0-16K,40K+8K "$t/data"
python3 -c 'import os, sys; sys.stdout.buffer.write(os.getxattr(sys.argv[1], "user.pbitmap"))' \
	"$t/data" >"$t/xattr-value"
python3 -c 'import os, sys; sys.stdout.buffer.write(os.getxattr(sys.argv[1], "user.pbitmap"))' \
	"$t/elf64-stamped" >"$t/marker-value"

# Profiles name their files by the last path component, as a package would keep them.
"$pb" export "$t/elf64-stamped" | sed "s|$t/elf64-stamped|prog|" >"$t/profile-elf64"
cp /usr/bin/true "$t/true"
"$pb" add -q "$t/true"
"$pb" set --pages 0,2-4,6 "$t/true"
"$pb" export "$t/true" | sed "s|$t/||" >"$t/profile-true"
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7) & 255 for i in range(20000)))' \
	>"$t/pdata"
"$pb" add -q "$t/pdata"
"$pb" set --ranges 0-8K "$t/pdata"
"$pb" export "$t/pdata" | sed "s|$t/pdata|data|" >"$t/profile-data"

mkdir -p "$out"
for f in elf64-stamped elf32-stamped elf64-plain elf64-interrupted record-raw xattr-value marker-value \
	 profile-elf64 profile-true profile-data; do
	(($(stat -c %s "$t/$f") < 20480)) || { echo "$f is too large for a seed" >&2; exit 1; }
	install -m 0644 "$t/$f" "$out/$f"
done
ls -l "$out"
