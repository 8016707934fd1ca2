#!/bin/bash
# t-bad-input: `pbitmap add` refuses what it must not touch, says so, and
# leaves the file exactly as it was.
#
# A corpus of broken ELF files (truncated in the ELF header, the program
# headers and the section header table; garbage after the magic; e_shoff past
# EOF; e_shnum 0xffff/0xfeff; a wrong e_shentsize; section header table
# overlapping the program headers or a section; e_shstrndx out of range; no
# section headers; ET_REL; ET_CORE; big-endian; bad EI_CLASS) and of things
# that are not regular files (directory, symlink and dangling symlink, FIFO,
# /dev/null, a socket), an empty file (pbitmap(1): an error), plus files the caller may not write (no read or no write
# permission as uid 65534): each must give exit status 1, one stderr line
# "pbitmap: PATH: problem" naming the file and the problem, and no change at
# all (sha256, size, mode, owner, inode, mtime, xattrs).
# Policy refusals must give exit status 3 ("skipped") instead: read-only
# filesystem, immutable and append-only files (ext4 loop image), a
# security.ima xattr.  A file being executed is stamped (a new copy is
# renamed over it) while the running instance keeps the old one.
# Finally a stamped file whose planes, header or undo data were corrupted:
# verify exits 1 and says "checksum"; strip and add repair it when the undo
# data is intact and refuse it untouched when not (see that section).
# Why: pbitmap runs as root from an rpm file trigger over every installed
# file; a single write to a file it should not touch is a corrupted system.

source "$(dirname "$0")/../lib.sh"
need gcc python3 mkfifo setpriv mkfs.ext4 mount umount chattr setfattr getfattr timeout sha256sum
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
# uid 65534 must be able to reach the files (but not necessarily read them).
chmod 755 "$(dirname "$d")" "$d"

cat >"$d/hello.c" <<'EOF'
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	if (argc > 1)
		sleep(60);
	puts("hello");
	return 0;
}
EOF
gcc -O1 -o "$d/good" "$d/hello.c" || fail "gcc"
gcc -O1 -c -o "$d/object.o" "$d/hello.c" || fail "gcc -c"
size=$(stat -c %s "$d/good")

# patch FILE OFFSET SIZE VALUE: store VALUE little-endian at OFFSET.
patch() {
	python3 - "$@" <<'EOF' || fail "patch $*"
import sys
path, off, size, val = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4], 0)
with open(path, "r+b") as f:
    f.seek(off)
    f.write(val.to_bytes(size, "little"))
EOF
}
# patch_field FILE FIELD VALUE: same for an ELF header field, by name.
patch_field() {
	local pos len
	read -r pos len < <($ELFCHECK field "$1" "$2") || fail "no field $2 in $1"
	patch "$1" "$pos" "$len" "$3"
}
# elf_value FILE FIELD: current value of an ELF header field.
elf_value() {
	python3 - "$1" "$2" "$TOP/tests" <<'EOF'
import sys
sys.path.insert(0, sys.argv[3])
import elfcheck
print(getattr(elfcheck.Elf(open(sys.argv[1], "rb").read()), sys.argv[2]))
EOF
}
# section FILE NAME: "OFFSET SIZE" of a section.
section() {
	python3 - "$1" "$2" "$TOP/tests" <<'EOF'
import sys
sys.path.insert(0, sys.argv[3])
import elfcheck
for s in elfcheck.Elf(open(sys.argv[1], "rb").read()).sections():
    if s["sname"] == sys.argv[2]:
        print(s["offset"], s["size"])
EOF
}
mk() { cp "$d/good" "$d/$1" && echo "$d/$1"; }

shoff=$(elf_value "$d/good" e_shoff)
phoff=$(elf_value "$d/good" e_phoff)
shnum=$(elf_value "$d/good" e_shnum)
note "test ELF: $size bytes, e_shoff=$shoff e_phoff=$phoff e_shnum=$shnum"

n_cases=0
# bad CASE STATUS PATTERN FILE [ADD-OPTIONS...]: `pbitmap add` on FILE exits
# with STATUS, stderr names FILE and matches PATTERN (an extended regular
# expression, case-insensitive), FILE is unchanged.  With BAD_UID set, add
# runs as that user (and group).
# Every problem is reported (fail_later) and the corpus goes on, so one run
# lists them all; the script fails at the end if any was found.
bad() {
	local name=$1 want=$2 pattern=$3 f=$4 got
	shift 4
	snapshot "$f"
	# shellcheck disable=SC2086
	timeout 10 ${BAD_UID:+setpriv --reuid=$BAD_UID --regid=$BAD_UID --clear-groups} \
		"$PBITMAP" add "$@" "$f" >"$OUT" 2>"$ERR"
	got=$?
	n_cases=$((n_cases + 1))
	if [[ $got != "$want" ]]; then
		fail_later "$name: exit status $got, expected $want; stderr: $(head -c 2000 "$ERR")"
	elif ! grep -qF "pbitmap: $f: " "$ERR"; then
		fail_later "$name: stderr does not say 'pbitmap: $f: ...': $(cat "$ERR")"
	# The problem must be in the words after "PATH: " (paths here contain
	# words like "core" or "class3" themselves).
	elif ! grep -F "pbitmap: $f: " "$ERR" | sed "s|^pbitmap: $f: ||" | grep -ciE "$pattern" >/dev/null; then
		fail_later "$name: stderr does not name the problem (/$pattern/): $(cat "$ERR")"
	else
		pass "$name: exit $want: $(head -1 "$ERR")"
	fi
	(assert_unchanged "$f" "$name") || fail_later "$name: file modified"
}

TRUNC='truncat|too short|too small|beyond|past (the )?end|end of (the )?file|EOF|outside|exceed|out of bounds'

# ---- broken ELF files ----------------------------------------------------------

f=$(mk trunc-ehdr) && truncate -s 40 "$f"
bad "truncated inside the ELF header" 1 "$TRUNC|ELF header" "$f"
f=$(mk trunc-phdr) && truncate -s $((phoff + 20)) "$f"
bad "truncated inside the program headers" 1 "$TRUNC|program header" "$f"
f=$(mk trunc-mid) && truncate -s $((size / 2)) "$f"
bad "truncated in the middle" 1 "$TRUNC" "$f"
f=$(mk trunc-shdr) && truncate -s $((shoff + 100)) "$f"
bad "truncated inside the section header table" 1 "$TRUNC|section header" "$f"

python3 - "$d/garbage1" "$d/garbage2" <<'EOF'
import random, sys
r = random.Random(1234)
with open(sys.argv[1], "wb") as f:   # plausible ident, garbage after it
    f.write(b"\x7fELF\x02\x01\x01" + bytes(r.randrange(256) for _ in range(8000)))
with open(sys.argv[2], "wb") as f:   # garbage right after the magic
    f.write(b"\x7fELF" + bytes(r.randrange(256) for _ in range(8000)))
EOF
GARBAGE='damaged|invalid|corrupt|malformed|bad|not a valid|unsupported|truncat|beyond|class|type|header|section'
bad "ELF ident + garbage" 1 "$GARBAGE" "$d/garbage1"
bad "ELF magic + garbage" 1 "$GARBAGE" "$d/garbage2"

f=$(mk shoff-eof) && patch_field "$f" e_shoff $((size + 4096))
bad "e_shoff beyond EOF" 1 "$TRUNC|section header" "$f"
f=$(mk shnum-ffff) && patch_field "$f" e_shnum 0xffff
bad "e_shnum 0xffff" 1 "$TRUNC|section header|too many|shnum" "$f"
f=$(mk shnum-feff) && patch_field "$f" e_shnum 0xfeff
bad "e_shnum 0xfeff" 1 "$TRUNC|section header|too many|shnum" "$f"
f=$(mk shentsize) && patch_field "$f" e_shentsize 32
bad "e_shentsize 32" 1 "shentsize|entry size|section header" "$f"
f=$(mk overlap-phdr) && patch_field "$f" e_shoff "$phoff"
bad "section header table over the program headers" 1 "overlap|section|$TRUNC" "$f"
read -r stroff strsize < <(section "$d/good" .shstrtab)
((stroff + strsize <= shoff)) || fail "unexpected layout: .shstrtab after the section header table"
f=$(mk overlap-section)
# Grow the .shstrtab section over the section header table.
python3 - "$f" "$TOP/tests" "$shoff" <<'EOF' || fail "patching .shstrtab size"
import struct, sys
sys.path.insert(0, sys.argv[2])
import elfcheck
data = open(sys.argv[1], "rb").read()
e = elfcheck.Elf(data)
shoff = int(sys.argv[3])
sec = e.sections()[e.e_shstrndx]
with open(sys.argv[1], "r+b") as f:
    f.seek(e.e_shoff + e.e_shstrndx * e.e_shentsize + 32)   # sh_size of Elf64_Shdr
    f.write(struct.pack("<Q", shoff - sec["offset"] + 64))
EOF
bad "a section overlapping the section header table" 1 "overlap" "$f"
f=$(mk shstrndx) && patch_field "$f" e_shstrndx $((shnum + 5))
bad "e_shstrndx out of range" 1 "shstrndx|string table|section name|out of range|index" "$f"
f=$(mk shstrndx-xindex) && patch_field "$f" e_shstrndx 0xffff
bad "e_shstrndx SHN_XINDEX" 1 "extended section numbering|SHN_XINDEX" "$f"
f=$(mk noshdr) && patch_field "$f" e_shoff 0 && patch_field "$f" e_shnum 0 && patch_field "$f" e_shstrndx 0
bad "no section headers" 1 "no section header|section header" "$f"
bad "ET_REL object" 1 "relocatable|ET_REL|object|type|not an executable" "$d/object.o"
f=$(mk core) && patch_field "$f" e_type 4
bad "ET_CORE" 1 "core|ET_CORE|type" "$f"
f=$(mk bigendian) && patch "$f" 5 1 2
bad "big-endian" 1 "endian|byte order|MSB|ELFDATA" "$f"
f=$(mk class3) && patch "$f" 4 1 3
bad "EI_CLASS 3" 1 "class" "$f"
f=$(mk class0) && patch "$f" 4 1 0
bad "EI_CLASS 0" 1 "class" "$f"

# The section name table is what `add` copies and grows by ".pbitmap": each
# way it cannot be a table of names is refused (these crashed `add` before).
# shstrtab FILE FIELD=VALUE...: patch .shstrtab's section header (Elf64_Shdr);
# `last=N` stores byte N as the table's last byte instead.
shstrtab() {
	python3 - "$TOP/tests" "$@" <<'EOF' || fail "patching .shstrtab of $1"
import struct, sys
sys.path.insert(0, sys.argv[1])
import elfcheck
path = sys.argv[2]
data = bytearray(open(path, "rb").read())
e = elfcheck.Elf(bytes(data))
sec = e.sections()[e.e_shstrndx]
hdr = e.e_shoff + e.e_shstrndx * e.e_shentsize
fields = {"type": (4, "<I"), "flags": (8, "<Q"), "size": (32, "<Q")}
for arg in sys.argv[3:]:
    name, value = arg.split("=")
    if name == "last":
        data[sec["offset"] + sec["size"] - 1] = int(value, 0)
    else:
        off, fmt = fields[name]
        struct.pack_into(fmt, data, hdr + off, int(value, 0))
open(path, "wb").write(data)
EOF
}
STRTAB='section name table'
f=$(mk strtab-nobits) && shstrtab "$f" type=8
bad "section name table SHT_NOBITS" 1 "$STRTAB.*(NOBITS|no content|not a string table)" "$f"
f=$(mk strtab-nobits-huge) && shstrtab "$f" type=8 size=0x10000000000
bad "section name table SHT_NOBITS of 1 TiB" 1 "$STRTAB.*(NOBITS|no content|not a string table)" "$f"
f=$(mk strtab-progbits) && shstrtab "$f" type=1
bad "section name table SHT_PROGBITS" 1 "$STRTAB.*not a string table" "$f"
f=$(mk strtab-empty) && shstrtab "$f" size=0
bad "section name table empty" 1 "$STRTAB.*empty" "$f"
f=$(mk strtab-unterminated) && shstrtab "$f" last=0x78
bad "section name table without a final NUL" 1 "$STRTAB.*(NUL|terminat)" "$f"
f=$(mk strtab-compressed) && shstrtab "$f" flags=0x800
bad "section name table SHF_COMPRESSED" 1 "$STRTAB.*compressed" "$f"
f=$(mk strtab-beyond) && shstrtab "$f" size=$((size))
bad "section name table beyond the end of the file" 1 "$TRUNC" "$f"

# ---- not regular files -----------------------------------------------------------

mkdir "$d/dir"
bad "a directory" 1 "directory" "$d/dir"
cp "$d/good" "$d/target"
ln -s target "$d/symlink"
snapshot "$d/target"
bad "a symlink" 1 "symbolic link|symlink" "$d/symlink"
assert_unchanged "$d/target" "add on a symlink to it"
ln -s nowhere "$d/dangling"
bad "a dangling symlink" 1 "symbolic link|symlink|no such file" "$d/dangling"
bad "a dangling symlink with -L" 1 "no such file|not found|dangling|symbolic link|symlink" "$d/dangling" -L
# ... and with -L the target of a good symlink is stamped, the link stays a link.
expect_status 0 "$PBITMAP" add -L "$d/symlink"
[[ -L $d/symlink ]] || fail "add -L replaced the symlink"
$ELFCHECK stamp "$d/good" "$d/target" >/dev/null || fail "add -L did not stamp the symlink's target"
pass "add -L stamps the target of a symlink"
mkfifo "$d/fifo"
bad "a FIFO" 1 "fifo|pipe|not a regular file|special" "$d/fifo"
bad "/dev/null" 1 "not a regular file|device|special" /dev/null
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$d/socket" || fail "socket"
bad "a socket" 1 "socket|not a regular file|special" "$d/socket"
: >"$d/empty"
bad "an empty file" 1 "empty" "$d/empty"

# ---- permissions (as uid 65534) ------------------------------------------------

# Root reads anything, so these run as uid 65534 (the file is root's).
f=$(mk noread) && chmod 0600 "$f"
BAD_UID=65534 bad "no read permission (uid 65534)" 1 "permission denied|not permitted" "$f"
f=$(mk nowrite) && chmod 0644 "$f"
BAD_UID=65534 bad "no write permission (uid 65534)" 1 "permission denied|not permitted|read-only" "$f"

# ---- policy refusals: exit 3 ------------------------------------------------------

SKIP_RO='read-only'
mkdir "$d/mnt"
truncate -s 64M "$d/fs.img"
mkfs.ext4 -q -F "$d/fs.img" || fail "mkfs.ext4"
mount -o loop "$d/fs.img" "$d/mnt" || fail "cannot loop-mount an ext4 image"
cp "$d/good" "$d/mnt/immutable" && chattr +i "$d/mnt/immutable" || fail "chattr +i"
bad "immutable file (ext4)" 3 "immutable" "$d/mnt/immutable"
chattr -i "$d/mnt/immutable"
cp "$d/good" "$d/mnt/append" && chattr +a "$d/mnt/append" || fail "chattr +a"
bad "append-only file (ext4)" 3 "append" "$d/mnt/append"
chattr -a "$d/mnt/append"
cp "$d/good" "$d/mnt/ro"
mount -o remount,ro "$d/mnt" || fail "remount ro"
bad "read-only ext4" 3 "$SKIP_RO" "$d/mnt/ro"
umount "$d/mnt" || fail "umount"
mount -t tmpfs -o size=16m pbtest "$d/mnt" || fail "mount tmpfs"
cp "$d/good" "$d/mnt/ro"
mount -o remount,ro "$d/mnt" || fail "remount tmpfs ro"
bad "read-only tmpfs" 3 "$SKIP_RO" "$d/mnt/ro"
umount "$d/mnt"

# A program being executed is not refused: pbitmap never opens a program
# for writing (ETXTBSY), it renames a new copy over it; the running
# instance keeps the old file.
cp "$d/good" "$d/busy"
"$d/busy" sleep >/dev/null &
busy_pid=$!
at_exit "kill $busy_pid"
for _ in $(seq 50); do
	[[ $(readlink "/proc/$busy_pid/exe" 2>/dev/null) == "$d/busy" ]] && break
	sleep 0.1
done
[[ $(readlink "/proc/$busy_pid/exe") == "$d/busy" ]] || fail "the busy program did not start"
busy_ino=$(stat -c %i "$d/busy")
expect_status 0 "$PBITMAP" add "$d/busy"
$ELFCHECK stamp "$d/good" "$d/busy" >/dev/null || fail "a program being executed was not stamped"
[[ $(stat -L -c %i "/proc/$busy_pid/exe") == "$busy_ino" && $(stat -c %i "$d/busy") != "$busy_ino" ]] ||
	fail "the running program does not keep its old file"
cmp -s "/proc/$busy_pid/exe" "$d/good" || fail "the running program's file was changed"
kill -0 "$busy_pid" || fail "the running program died"
kill "$busy_pid"
wait "$busy_pid" 2>/dev/null
pass "a program being executed is stamped; the running instance keeps the old file"

cp "$d/good" "$d/ima"
setfattr -n security.ima -v 0x0302 "$d/ima" || fail "cannot set security.ima"
bad "a file with security.ima" 3 "ima|signature|signed|integrity" "$d/ima"

# ---- a stamped file with a damaged record -------------------------------------

# A flipped byte makes the checksum fail, so verify refuses the record.  What
# strip and add then do depends on whether the undo data (orig_shoff,
# orig_shnum, orig_shstrndx, content_size, record_offset, tail_size) still
# describes the file:
#   plane, header (the `runs` field at 40): the undo data is intact, so strip
#     restores the original (exit 0) and add replaces the damaged record with
#     a fresh valid stamp (exit 0) that strips to the original;
#   undo (a byte of orig_shoff at 56): nothing tells where the original ends,
#     so strip and add both refuse (exit 1) and leave the file untouched;
#   orig-strtab (a plane byte, and the last byte of the original section name
#     table, in the original content, made non-NUL): undoing would give a
#     file add refuses, so both refuse untouched (add used to remove the
#     stamp, then fail: fuzz_stamp found it);
#   orig-overlap (a plane byte, and the original name table's entry in the
#     original section header table pointed at that table itself): the same.
for where in plane header undo orig-strtab orig-overlap; do
	f=$(mk "corrupt-$where")
	expect_status 0 "$PBITMAP" add "$f"
	read -r off rsize < <($ELFCHECK record "$f") || fail "no record after add"
	case $where in
	plane) pos=$((off + 128)) ;;
	orig-strtab)
		pos=$((off + 128))
		read -r stroff strsize < <(section "$d/good" .shstrtab)
		patch "$f" $((stroff + strsize - 1)) 1 0x78
		;;
	orig-overlap)
		pos=$((off + 128))
		# sh_offset and sh_size of the Elf64_Shdr: the table's first
		# 64 bytes, which end with a NUL (entry 0 is all zeros).
		patch "$f" $((shoff + $(elf_value "$d/good" e_shstrndx) * 64 + 24)) 8 "$shoff"
		patch "$f" $((shoff + $(elf_value "$d/good" e_shstrndx) * 64 + 32)) 8 64
		;;
	header) pos=$((off + 40)) ;;
	undo) pos=$((off + 56)) ;;
	esac
	# In both slots: either alone leaves the other current.
	read -r _ slot0 slot1 < <($ELFCHECK slots "$f") || fail "no slots after add"
	python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    for pos in map(int, sys.argv[2:]):
        f.seek(pos); b = f.read(1); f.seek(pos)
        f.write(bytes([b[0] ^ 0x5a]))' "$f" "$pos" "$((pos + slot1 - slot0))" || fail "flip"
	snapshot "$f"
	expect_status 1 "$PBITMAP" verify "$f"
	grep -qF "pbitmap: $f: " "$ERR" && grep -qi "checksum" "$ERR" ||
		fail "verify of a record with a flipped $where byte: stderr: $(cat "$ERR")"
	assert_unchanged "$f" "verify"
	n_cases=$((n_cases + 1))
	pass "corrupted $where byte (record at $off, $rsize bytes): verify exit 1: $(head -1 "$ERR")"
	cp "$f" "$f.2"
	snapshot "$f.2"
	if [[ $where == undo || $where == orig-* ]]; then
		expect_status 1 "$PBITMAP" strip "$f"
		grep -qF "pbitmap: $f: cannot remove the bitmap" "$ERR" ||
			fail "strip of a record with damaged undo data: stderr: $(cat "$ERR")"
		assert_unchanged "$f" "refused strip"
		pass "corrupted $where byte: strip refused: $(head -1 "$ERR")"
		expect_status 1 "$PBITMAP" add "$f.2"
		grep -qF "pbitmap: $f.2: cannot remove the bitmap" "$ERR" ||
			fail "add on a record with damaged undo data: stderr: $(cat "$ERR")"
		assert_unchanged "$f.2" "refused add"
		pass "corrupted $where byte: add refused: $(grep -v '^pbitmap: .*: replacing' "$ERR" | head -1)"
	else
		expect_status 0 "$PBITMAP" strip "$f"
		assert_cmp "$f" "$d/good"
		pass "corrupted $where byte: strip gives the original"
		expect_status 0 "$PBITMAP" add "$f.2"
		grep -qF "pbitmap: $f.2: replacing a damaged bitmap" "$ERR" ||
			fail "add on a damaged record does not say it replaces it: $(cat "$ERR")"
		expect_status 0 "$PBITMAP" verify "$f.2"
		$ELFCHECK stamp "$d/good" "$f.2" >/dev/null || fail "add on a damaged record: bad layout"
		expect_status 0 "$PBITMAP" strip "$f.2"
		assert_cmp "$f.2" "$d/good"
		pass "corrupted $where byte: add replaces the record; strip then gives the original"
	fi
done

note "$n_cases bad inputs refused, every file left untouched"
