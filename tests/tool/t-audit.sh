#!/bin/bash
# t-audit: the LD_AUDIT module, build/pbitmap-audit.so (pbitmap-tool/audit/),
# the user-space baseline of the kernel's prefetch: ld.so calls it for the
# program and every object it maps, and it asks for readahead of the pages
# each object's bitmap marks.
#
# On coldstart.sh's loop device (a chroot holding a program with six
# libraries, stamped and learned with `pbitmap record`):
#   - With PBITMAP_AUDIT_VERBOSE=1 it names every object ld.so maps: the
#     program (found through /proc/self/exe, and without /proc through
#     AT_EXECFN), ld.so and the six libraries each with extents and bytes
#     prefetched (every one has pages marked), and the program prints what
#     it prints without the module.
#   - A FIFO named linux-vdso.so.1 in the current directory (the vDSO's
#     name, which has no slash) is not opened: the program runs.
#   - A library whose record is damaged, and one with no bitmap: "not
#     prefetched", with the reason, and the program runs as before.
#   - Cold read requests, medians of 7 interleaved runs of each: a direct
#     start, the same under LD_AUDIT and under pbitmap-run (the launcher
#     that reads every bitmap before the program starts).  The module's run
#     goes through env (the chroot has no shell), whose own start it pays
#     for.  Asserted: the module makes fewer requests than a direct start.
#     Printed: all three.
# Needs root (loop device, drop_caches).

source "$(dirname "$0")/../lib.sh"
need gcc ldd python3
AUDIT=$TOP/build/pbitmap-audit.so
[[ -f $AUDIT ]] || fail "build/pbitmap-audit.so missing (make)"
[[ -x $TOP/build/pbitmap && -x $TOP/build/pbitmap-run ]] ||
	fail "build/pbitmap or build/pbitmap-run missing (make; not the sanitizer build: its own libraries would be counted)"
source "$TOP/tests/tool/coldstart.sh"
coldfs_setup "$(tmpdir)"
coldfs_add_binary "$TOP/build/pbitmap"	# record runs inside the chroot
coldfs_add_binary "$TOP/build/pbitmap-run"
coldfs_add_binary /usr/bin/env
install -D -m 0644 "$AUDIT" "$CS_ROOT/usr/lib/pbitmap/pbitmap-audit.so" || fail "install the module"
coldfs_learn
# ld.so loads an audit module's libc in a namespace of its own, where it
# finds ld.so by its soname in the library path, as Debian has it (a
# link: coldfs_learn stamps regular files, before it).
ln -s /lib64/ld-linux-x86-64.so.2 "$CS_ROOT$CS_LIBDIR/ld-linux-x86-64.so.2" &&
	ldconfig -r "$CS_ROOT" || fail "ld.so in the library directory"
A=/usr/lib/pbitmap/pbitmap-audit.so
L=$CS_ROOT$CS_LIBDIR

w=$(tmpdir)
want=$(chroot "$CS_ROOT" /usr/bin/prog) || fail "prog does not run"
# audited NAME: a warm run under the module, verbose; its lines in $w/NAME.
audited() {
	local got
	got=$(timeout 60 chroot "$CS_ROOT" /usr/bin/env PBITMAP_AUDIT_VERBOSE=1 LD_AUDIT=$A \
		/usr/bin/prog 2>"$w/$1") ||
		fail "prog under LD_AUDIT failed: $(cat "$w/$1")"
	[[ $got == "$want" ]] || fail "prog under LD_AUDIT printed '$got', without it '$want'"
}
# prefetched NAME OBJECT: OBJECT's line in $w/NAME says extents > 0.
prefetched() {
	grep -Eq "^pbitmap-audit: $2: [1-9][0-9]* extents, [1-9][0-9]* bytes$" "$w/$1" ||
		fail "$2 not prefetched: $(cat "$w/$1")"
}
# With /proc, the program is found as /proc/self/exe; the runs below have
# none (as coldstart.sh leaves the chroot) and find it by AT_EXECFN.
mount -t proc proc "$CS_ROOT/proc" || fail "mount proc in the chroot"
audited all
umount "$CS_ROOT/proc" || fail "umount proc"
libs=(libm.so.6 libbz2.so.1.0 liblzma.so.5 libgmp.so.10 libsqlite3.so.0 libc.so.6)
prefetched all '\(program\)'
prefetched all /lib64/ld-linux-x86-64.so.2
for l in "${libs[@]}"; do prefetched all "$CS_LIBDIR/$l"; done
[[ $(grep -c '^pbitmap-audit: ' "$w/all") == 8 ]] ||
	fail "expected 8 objects (program, ld.so, 6 libraries): $(cat "$w/all")"
pass "LD_AUDIT: the program, ld.so and its 6 libraries prefetched, output unchanged"

# The vDSO's name has no slash: it is no file, and a FIFO of that name in
# the current directory (chroot's: /) must neither be opened nor block.
mkfifo "$CS_ROOT/linux-vdso.so.1" || fail "mkfifo"
audited fifo
rm -f "$CS_ROOT/linux-vdso.so.1"
prefetched fifo '\(program\)'
! grep -q 'linux-vdso' "$w/fifo" || fail "the vDSO's name was looked up as a file: $(cat "$w/fifo")"
pass "a FIFO named linux-vdso.so.1 in the current directory: not opened, the program runs"

# A damaged record (the last byte of both slots flipped: neither is valid)
# and a library with no bitmap.
cp -a "$L/libbz2.so.1.0" "$w/bz2.keep" && cp -a "$L/liblzma.so.5" "$w/lzma.keep" || fail "keep copies"
python3 - "$L/libbz2.so.1.0" <<'PY' || fail "damage the record"
import os, struct, sys
p = sys.argv[1]
m = os.getxattr(p, "user.pbitmap")
size, off = struct.unpack_from("<IQ", m, 4)
k = (size + 1023) // 1024          # FORMAT.md: the two slots of a section
stride, slot = k * 512, size - k * 512
with open(p, "r+b") as f:
    for at in (off + slot - 1, off + stride + slot - 1):
        f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0x01]))
PY
"$PBITMAP" strip -q "$L/liblzma.so.5" || fail "strip liblzma"
audited damaged
grep -q "^pbitmap-audit: $CS_LIBDIR/libbz2.so.1.0: not prefetched: " "$w/damaged" ||
	fail "damaged record not reported: $(cat "$w/damaged")"
grep -q "^pbitmap-audit: $CS_LIBDIR/liblzma.so.5: not prefetched: not stamped$" "$w/damaged" ||
	fail "unstamped library not reported: $(cat "$w/damaged")"
prefetched damaged "$CS_LIBDIR/libgmp.so.10"
note "$(grep libbz2 "$w/damaged")"
cp -a "$w/bz2.keep" "$L/libbz2.so.1.0" && cp -a "$w/lzma.keep" "$L/liblzma.so.5" || fail "restore"
audited restored
prefetched restored "$CS_LIBDIR/libbz2.so.1.0"
pass "a damaged record and a library without a bitmap: not prefetched, said why, the program runs"

direct=() audit=() launcher=()
for _ in 1 2 3 4 5 6 7; do
	read -r r _ < <(cold_reads /usr/bin/prog) || exit 1
	direct+=("$r")
	read -r r _ < <(cold_reads /usr/bin/env LD_AUDIT=$A /usr/bin/prog) || exit 1
	audit+=("$r")
	read -r r _ < <(cold_reads /usr/bin/pbitmap-run /usr/bin/prog) || exit 1
	launcher+=("$r")
done
md=$(median "${direct[@]}") ma=$(median "${audit[@]}") ml=$(median "${launcher[@]}")
note "cold read requests of prog (6 libraries): direct ${direct[*]} (median $md);" \
     "LD_AUDIT ${audit[*]} (median $ma); pbitmap-run ${launcher[*]} (median $ml)"
((ma < md)) || fail "under LD_AUDIT $ma read requests, no fewer than a direct start ($md)"
pass "cold start: median $ma read requests under LD_AUDIT, $ml through pbitmap-run, $md direct"
