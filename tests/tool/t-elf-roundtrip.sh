#!/bin/bash
# t-elf-roundtrip: stamping an ELF file is invisible to everything but pbitmap,
# and fully reversible.
#
# For every kind of ELF file gcc makes here (static, dynamic, PIE, non-PIE,
# shared library and a program using it, 32-bit PIE and static, stripped,
# tiny, > 2 MB of text) and then for a dozen of Debian's own binaries and
# libraries, this asserts that after `pbitmap add`:
#   - readelf lists .pbitmap with type PROGBITS, and an
#     independent parser (tests/elfcheck.py) finds the layout of the spec:
#     original bytes untouched but e_shoff/e_shnum, record page-aligned past
#     the original end and every PT_LOAD, header fields consistent;
#   - eu-elflint --gnu-ld reports nothing the original did not (no message
#     at all for the .pbitmap section: it is SHT_PROGBITS); readelf warns
#     no more than on the original;
#   - the program (or a program loading the library) behaves identically;
#   - GNU strip and objcopy accept it like the original;
#   - verify exits 0, add again changes no byte, digest (every algorithm)
#     equals the coreutils sum of the original, undo prints the original;
#   - strip gives back the original byte for byte, also after a re-stamp
#     with --generations 8.
# Why: the whole design rests on "the file still is the same program" and
# on rpm being able to verify the package digest through `pbitmap digest`.

source "$(dirname "$0")/../lib.sh"
need gcc readelf eu-elflint strip objcopy size python3 sha256sum md5sum sha1sum \
	sha224sum sha384sum sha512sum cmp ldd
ELFCHECK="python3 $TOP/tests/elfcheck.py"
# Runners have their output captured; they report setup problems on fd 4.
exec 4>&2

d=$(tmpdir)

# ---- the checks ------------------------------------------------------------

# elflint_msgs FILE: eu-elflint's messages with the file name taken out.
elflint_msgs() {
	eu-elflint --gnu-ld "$1" 2>&1 | sed -e "s|$1|FILE|g" | sort -u
}

# readelf_warnings FILE: what readelf complains about.
readelf_warnings() {
	readelf -W -a "$1" 2>&1 >/dev/null | sed -e "s|$1|FILE|g" | sort -u
}

# gnu_tools_msgs FILE: exit status and messages of strip and objcopy.
gnu_tools_msgs() {
	local f=$1 t
	t=$(mktemp -d "$d/gnu.XXXXXX")
	strip -o "$t/stripped" "$f" 2>&1 | sed -e "s|$f|FILE|g"
	echo "strip=${PIPESTATUS[0]}"
	objcopy "$f" "$t/copied" 2>&1 | sed -e "s|$f|FILE|g"
	echo "objcopy=${PIPESTATUS[0]}"
	rm -rf "$t"
}

# roundtrip NAME FILE RUNNER: FILE is a pristine ELF file; RUNNER is a shell
# function called with a path to a copy of FILE that must behave like FILE.
roundtrip() {
	local name=$1 src=$2 runner=$3
	local base dir orig f sum out algo want got
	base=$(basename "$src")
	dir="$d/rt-$name"
	mkdir -p "$dir/orig" "$dir/work"
	orig="$dir/orig/$base"
	f="$dir/work/$base"
	cp "$src" "$orig"
	cp "$src" "$f"
	chmod u+w "$orig" "$f"
	sum=$(sha256sum <"$orig" | cut -d' ' -f1)

	$runner "$orig" >"$dir/run.orig" 2>&1
	echo "exit=$?" >>"$dir/run.orig"
	elflint_msgs "$orig" >"$dir/lint.orig"
	readelf_warnings "$orig" >"$dir/rw.orig"
	gnu_tools_msgs "$orig" >"$dir/gnu.orig"

	expect_status 0 "$PBITMAP" add "$f"
	[[ -s $ERR ]] && ! grep -q -- "$f" "$ERR" && fail "$name: add printed something not naming the file: $(cat "$ERR")"

	readelf -S -W "$f" >"$dir/sections" || fail "$name: readelf -S failed on the stamped file"
	grep -q '\.pbitmap' "$dir/sections" || fail "$name: readelf -S does not list .pbitmap"
	grep '\.pbitmap' "$dir/sections" | grep -c ' PROGBITS ' >/dev/null ||
		fail "$name: .pbitmap type is not PROGBITS: $(grep '\.pbitmap' "$dir/sections")"
	figures=$($ELFCHECK stamp "$orig" "$f") || fail "$name: layout check failed"

	elflint_msgs "$f" >"$dir/lint.new"
	if [[ -n $(comm -13 "$dir/lint.orig" "$dir/lint.new") ]]; then
		fail_later "$name: eu-elflint --gnu-ld reports new problems: $(comm -13 "$dir/lint.orig" "$dir/lint.new" | head -5)"
	fi
	readelf_warnings "$f" >"$dir/rw.new"
	if [[ -n $(comm -13 "$dir/rw.orig" "$dir/rw.new") ]]; then
		fail_later "$name: readelf warns: $(comm -13 "$dir/rw.orig" "$dir/rw.new" | head -5)"
	fi

	$runner "$f" >"$dir/run.new" 2>&1
	echo "exit=$?" >>"$dir/run.new"
	cmp -s "$dir/run.orig" "$dir/run.new" ||
		fail "$name: behaves differently once stamped: $(diff "$dir/run.orig" "$dir/run.new" | head -10)"

	gnu_tools_msgs "$f" >"$dir/gnu.new"
	cmp -s "$dir/gnu.orig" "$dir/gnu.new" ||
		fail_later "$name: GNU strip/objcopy treat the stamped file differently: $(diff "$dir/gnu.orig" "$dir/gnu.new")"

	expect_status 0 "$PBITMAP" verify "$f"
	expect_status 0 "$PBITMAP" show "$f"
	[[ -s $OUT ]] || fail "$name: show printed nothing"

	# Idempotent: same geometry => no byte changes.
	local stamped_sum
	stamped_sum=$(sha256sum <"$f" | cut -d' ' -f1)
	expect_status 0 "$PBITMAP" add "$f"
	[[ $(sha256sum <"$f" | cut -d' ' -f1) == "$stamped_sum" ]] || fail "$name: second add changed the file"
	expect_status 0 "$PBITMAP" add -v "$f"
	grep -q 'already stamped' "$ERR" || fail "$name: add -v of a stamped file did not say 'already stamped': $(cat "$ERR")"
	[[ $(sha256sum <"$f" | cut -d' ' -f1) == "$stamped_sum" ]] || fail "$name: third add changed the file"

	# digest = the coreutils sum of the original, in sha256sum's format.
	expect_status 0 "$PBITMAP" digest "$f"
	[[ $(cat "$OUT") == "$sum  $f" ]] || fail "$name: digest printed '$(cat "$OUT")', expected '$sum  $f'"
	for algo in md5 sha1 sha224 sha256 sha384 sha512; do
		want=$(${algo}sum <"$orig" | cut -d' ' -f1)
		expect_status 0 "$PBITMAP" digest --algo "$algo" "$f"
		got=$(cut -d' ' -f1 "$OUT")
		[[ $got == "$want" ]] || fail "$name: digest --algo $algo: $got, expected $want"
	done
	# ... and on the unstamped original too.
	expect_status 0 "$PBITMAP" digest "$orig"
	[[ $(cut -d' ' -f1 "$OUT") == "$sum" ]] || fail "$name: digest of the unstamped file is wrong"

	"$PBITMAP" undo "$f" >"$dir/undone" || fail "$name: undo failed"
	cmp -s "$dir/undone" "$orig" || fail "$name: undo output differs from the original"

	expect_status 0 "$PBITMAP" strip "$f"
	assert_cmp "$f" "$orig"

	# Re-stamp with another geometry, then strip: still the original.
	expect_status 0 "$PBITMAP" add "$f"
	expect_status 0 "$PBITMAP" add --generations 8 "$f"
	# Failed once in a CI rehearsal (2026-11-27, deb-bash, exit status 0
	# and no message) and not reproduced in 27 runs since: a failure
	# says what the file held, what add said and what show reads.
	local hdr
	hdr=$($ELFCHECK header "$f" 2>&1)
	[[ $(sed -n 's/^nr_planes=//p' <<<"$hdr") == 8 ]] ||
		fail "$name: --generations 8 did not give 8 planes; elfcheck header: $(tr '\n' ' ' <<<"$hdr");" \
			"add said: $(tr '\n' ' ' <"$ERR"); show: $("$PBITMAP" show "$f" 2>&1 | head -n 4 | tr '\n' ' ')"
	$ELFCHECK stamp "$orig" "$f" >/dev/null || fail "$name: layout after re-stamp"
	expect_status 0 "$PBITMAP" verify "$f"
	expect_status 0 "$PBITMAP" strip "$f"
	assert_cmp "$f" "$orig"

	pass "$name: $figures"
	rm -rf "$dir"
}

# Runners.  run_exe: the program itself, from its own directory so argv[0]
# is the same for the original and the stamped copy.
RUN_ARGS=()
run_exe() {
	(cd "$(dirname "$1")" && "./$(basename "$1")" "${RUN_ARGS[@]}")
}

# ---- programs built here ------------------------------------------------------

src=$d/src
mkdir -p "$src"
cat >"$src/hello.c" <<'EOF'
#include <stdio.h>
#include <string.h>
static const char table[] = "pbitmap round trip";
int main(int argc, char **argv)
{
	unsigned h = 5381;
	for (size_t i = 0; i < sizeof(table); i++)
		h = h * 33 + (unsigned char)table[i];
	printf("hello argc=%d hash=%u len=%zu\n", argc, h, strlen(argv[0]));
	return 3;
}
EOF
cat >"$src/lib.c" <<'EOF'
int pbt_value(int x) { return x * 7 + 1; }
const char *pbt_name(void) { return "libpbt"; }
EOF
cat >"$src/uselib.c" <<'EOF'
#include <stdio.h>
int pbt_value(int);
const char *pbt_name(void);
int main(void) { printf("%s %d\n", pbt_name(), pbt_value(6)); return 0; }
EOF
cat >"$src/tiny.c" <<'EOF'
void _start(void)
{
	__asm__ volatile("mov $60, %eax\n\tmov $42, %edi\n\tsyscall");
	__builtin_unreachable();
}
EOF

cc() { gcc -O1 -g "$@" || fail "gcc $*"; }
cc -o "$d/dynamic" "$src/hello.c"
cc -static -o "$d/static" "$src/hello.c"
cc -fPIE -pie -o "$d/pie" "$src/hello.c"
cc -fno-PIE -no-pie -o "$d/nopie" "$src/hello.c"
cc -m32 -fPIE -pie -o "$d/pie32" "$src/hello.c"
cc -m32 -static -o "$d/static32" "$src/hello.c"
cp "$d/dynamic" "$d/stripped" && strip -s "$d/stripped" || fail "strip -s"
gcc -Os -nostdlib -static -o "$d/tiny" "$src/tiny.c" || fail "gcc tiny"
mkdir -p "$d/libdir"
cc -shared -fPIC -o "$d/libdir/libpbt.so" "$src/lib.c"
cc -o "$d/uselib" "$src/uselib.c" -L"$d/libdir" -lpbt

# Large: > 2 MB of text in many functions.
python3 - "$src/large.c" <<'EOF'
import sys
n = 2600
with open(sys.argv[1], "w") as f:
    f.write("#include <stdio.h>\n")
    for i in range(n):
        f.write("__attribute__((noinline)) unsigned f%d(unsigned x)\n"
                "{ __asm__ volatile(\".fill 800, 1, 0x90\"); return x * %d + %d; }\n" % (i, 2 * i + 1, i))
    f.write("typedef unsigned (*fn)(unsigned);\nstatic fn table[] = {\n")
    f.write(",\n".join("f%d" % i for i in range(n)))
    f.write("};\nint main(void) { unsigned s = 1;\n"
            "for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++) s = table[i](s);\n"
            "printf(\"large %u\\n\", s); return 0; }\n")
EOF
gcc -O0 -o "$d/large" "$src/large.c" || fail "gcc large"
text=$(size -A "$d/large" | awk '$1 == ".text" { print $2 }')
((text > 2 * 1024 * 1024)) || fail "large test program has only $text bytes of .text"
note "large: .text is $text bytes"

# Sanity: the programs run as expected before anything else.
"$d/tiny"; [[ $? == 42 ]] || fail "tiny program does not exit 42"
"$d/static32" >/dev/null; [[ $? == 3 ]] || fail "32-bit program does not run"

for p in static dynamic pie nopie pie32 static32 stripped tiny large; do
	roundtrip "$p" "$d/$p" run_exe
done

# The shared library, exercised by a program that links against it.
run_uselib() {
	LD_LIBRARY_PATH=$(dirname "$1") "$d/uselib"
}
roundtrip libpbt.so "$d/libdir/libpbt.so" run_uselib

# The program using the (unstamped) library, stamped itself.
run_uselib_prog() {
	LD_LIBRARY_PATH=$d/libdir "$1"
}
roundtrip uselib "$d/uselib" run_uselib_prog

# ---- Debian's own binaries ----------------------------------------------------

# A dlopen() probe for libraries: loads the given path, resolves a symbol.
cat >"$src/probe.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) { printf("dlopen failed\n"); return 1; }
	for (int i = 2; i < argc; i++)
		printf("%s %s\n", argv[i], dlsym(h, argv[i]) ? "found" : "missing");
	return 0;
}
EOF
cc -o "$d/probe" "$src/probe.c" -ldl

# run_lib: dlopen the copy by path, then run a consumer with the copy found
# first through LD_LIBRARY_PATH (checked with ldd: it really is loaded).
LIB_SYMS=()
LIB_CONSUMER=()
run_lib() {
	local libdir soname
	libdir=$(dirname "$1")
	soname=$(basename "$1")
	"$d/probe" "$1" "${LIB_SYMS[@]}"
	echo "probe=$?"
	LD_LIBRARY_PATH=$libdir ldd "${LIB_CONSUMER[0]}" | grep -cF "$soname => $libdir/$soname" >/dev/null ||
		{ fail "consumer ${LIB_CONSUMER[0]} does not load $1"; } 2>&4
	LD_LIBRARY_PATH=$libdir "${LIB_CONSUMER[@]}"
}

# run_ldso: the dynamic loader run as a program, and as the interpreter.
run_ldso() {
	"$1" --version | head -1
	"$1" /usr/bin/ls --version
}

# roundtrip stops the script on most problems and reports the rest with
# fail_later: a Debian file counts as round-tripped only if it drew none.
debian_ok=0
debian_total=0
deb_roundtrip() {
	local problems=$_LIB_LATER
	debian_total=$((debian_total + 1))
	roundtrip "$@"
	((_LIB_LATER == problems)) && debian_ok=$((debian_ok + 1))
	return 0
}
deb_exe() {
	local p=$1
	shift
	[[ -e $p ]] || fail "expected Debian binary $p is missing"
	RUN_ARGS=("$@")
	deb_roundtrip "deb-$(basename "$p")" "$(readlink -f "$p")" run_exe
}
deb_lib() {
	local p=$1 real
	shift
	[[ -e $p ]] || fail "expected Debian library $p is missing"
	LIB_SYMS=("$1")
	shift
	LIB_CONSUMER=("$@")
	real=$(readlink -f "$p")
	# Keep the soname as the file name so LD_LIBRARY_PATH finds the copy.
	cp "$real" "$d/$(basename "$p")"
	deb_roundtrip "deb-$(basename "$p")" "$d/$(basename "$p")" run_lib
}

L=/usr/lib/x86_64-linux-gnu
deb_exe /usr/bin/ls --version
deb_exe /usr/bin/cat --version
deb_exe /usr/bin/bash --version
deb_exe /usr/bin/find --version
deb_exe /usr/bin/tar --version
deb_exe /usr/bin/gzip --version
deb_exe /usr/bin/ld.bfd --version
deb_exe /usr/bin/python3 --version
deb_exe /usr/bin/readelf --version
deb_exe /usr/bin/perl -e 'print "perl ok\n"'
deb_lib $L/libc.so.6 printf /usr/bin/ls --version
deb_lib $L/libz.so.1 crc32 /usr/bin/ld.bfd --version
deb_lib $L/libssl.so.3 SSL_new /usr/bin/openssl version
deb_lib $L/libcrypto.so.3 EVP_sha256 /usr/bin/openssl sha256 /etc/hostname
deb_lib $L/libelf.so.1 elf_begin /usr/bin/eu-readelf -h /usr/bin/ls
cp "$(readlink -f $L/ld-linux-x86-64.so.2)" "$d/ld-linux-x86-64.so.2"
deb_roundtrip deb-ld.so "$d/ld-linux-x86-64.so.2" run_ldso

note "Debian binaries round-tripped without a problem: $debian_ok of $debian_total"
((debian_total == 16)) || fail "$debian_total Debian files tried, the list above has 16"
((debian_ok == debian_total)) || fail "$((debian_total - debian_ok)) of $debian_total Debian files had problems (above)"
