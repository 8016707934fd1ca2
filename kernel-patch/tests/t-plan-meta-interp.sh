#!/bin/bash
# Guest test: a plan's metadata table is read before exec looks its
# interpreter up (0026), and not when the exec may turn out secure.
#
# A copy of true(1), owned by root, whose PT_INTERP names a copy of ld.so
# at the end of five fresh directories (/var/tmp/pmi/a/b/c/d/e/l), with a
# plan of two files outside them and a metadata table of exactly the
# blocks the interpreter's look-up reads: those directories' blocks and
# the inode-table blocks of them and of ld.so (metalib.sh).  exec looks
# the interpreter up before it maps the executable, where 0024 read the
# table; the plan's own look-ups pass none of those directories.
#
#   - After a drop, each of three cold execs with vm.pbitmap_plan_meta=1
#     submits pages of the table (pbitmap_plan_meta_pages): it was read
#     before the look-up.  Read where 0024 read it, after the look-up, the
#     table finds every block cached and submits none (seen: the
#     tracepoint's submitted=0 cached=6).  The read requests of those
#     execs and of three with 0 are printed, not compared: whether one
#     batch saves requests depends on where the filesystem put the
#     blocks (2 ranges on a fresh guest, 53 against 60 requests; 5 ranges
#     after the other tests of a make check shard, 58 against 57).
#   - Run by nobody, a set-user-ID copy, a set-group-ID copy, a copy
#     with a file capability and an execute-only copy (mode 0711, which
#     nobody may run but not read) are secure execs: exec follows no plan
#     (pbitmap_plan_skip_secure) and reads no page of the table, though
#     that is decided only after the interpreter's look-up.  The same copy
#     without those bits, run by nobody, has its table read.  "Run by
#     nobody" is an exec by a process that is nobody already: setpriv(1)
#     keeps root's capabilities until it execs (PR_SET_KEEPCAPS), and an
#     exec with CAP_DAC_OVERRIDE may read the execute-only copy (exec's
#     own would_dump() then leaves it dumpable, and the plan is followed),
#     so setpriv runs a shell that execs the copy.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=/var/tmp/pmi
CRAFT=(python3 "$HERE/craft-meta.py")
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=kernel-patch/tests/vmstatlib.sh
. "$HERE/vmstatlib.sh"
# shellcheck source=kernel-patch/tests/metalib.sh
. "$HERE/metalib.sh"
for t in filefrag debugfs setpriv; do
	command -v $t >/dev/null || fail "$t is not installed"
done
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" && cd "$W"
meta_table_setup "$W"

# ---- the interpreter, the program, its plan and its table --------------------------
INTERP=$W/a/b/c/d/e/l
mkdir -p "$(dirname "$INTERP")"
cp /lib64/ld-linux-x86-64.so.2 "$INTERP"
cp /usr/bin/true prog
# The new path over the old one in PT_INTERP's bytes, NUL-padded: exec
# reads the path as a C string of at most the segment's size.
python3 - prog "$INTERP" <<'EOF' || fail "cannot point prog's PT_INTERP at $INTERP"
import struct, sys
path, interp = sys.argv[1], sys.argv[2].encode()
img = bytearray(open(path, "rb").read())
phoff, = struct.unpack_from("<Q", img, 0x20)
phentsize, phnum = struct.unpack_from("<HH", img, 0x36)
for i in range(phnum):
    at = phoff + i * phentsize
    ptype, = struct.unpack_from("<I", img, at)
    if ptype != 3:		# PT_INTERP
        continue
    off, = struct.unpack_from("<Q", img, at + 8)
    size, = struct.unpack_from("<Q", img, at + 32)
    if len(interp) + 1 > size:
        sys.exit("PT_INTERP holds %d bytes, the path needs %d" % (size, len(interp) + 1))
    img[off:off + size] = interp.ljust(size, b"\0")
    open(path, "wb").write(img)
    sys.exit(0)
sys.exit("no PT_INTERP")
EOF
./prog || fail "prog with its interpreter at $INTERP does not run"
head -c 4096 /dev/urandom >planned1
head -c 4096 /dev/urandom >planned2
pbitmap add -q --plan-size 16K prog || fail "cannot stamp prog with a plan area"
# two files (craft-meta.py wants a plan as pbitmap plan writes it, of two)
pbitmap plan prog "$W/planned1" "$W/planned2" || fail "pbitmap plan"
sync
dirs=("$W/a" "$W/a/b" "$W/a/b/c" "$W/a/b/c/d" "$W/a/b/c/d/e")
{ dir_blocks "${dirs[@]}"; inode_blocks "$SRC" "${dirs[@]}" "$INTERP"; } | sort -n -u >units.txt
units=$(wc -l <units.txt)
[ "$units" -ge 6 ] || fail "only $units metadata blocks found on the interpreter's path: wanted at least 6"
mapfile -t ranges < <(meta_ranges units.txt)
DEV=$(stat -c %Hd:%Ld prog)
UUID=$(findmnt -no UUID --target "$W")
[ -n "$UUID" ] || fail "no UUID for $W's filesystem"
"${CRAFT[@]}" prog --dev "$DEV" --uuid "$UUID" "${ranges[@]/#/--range=}" >/dev/null ||
	fail "craft-meta.py prog"
echo "table: $units blocks of the interpreter's look-up in ${#ranges[@]} ranges on $DEV ($UUID)"
# The new directories' blocks stay dirty in the journal until it is
# checkpointed, and a drop keeps dirty buffers: freezing the filesystem
# checkpoints it, after which a drop evicts them.
command -v fsfreeze >/dev/null || fail "fsfreeze is not installed"
MNT=$(findmnt -no TARGET --target "$W")
sync
fsfreeze -f "$MNT" || fail "cannot freeze $MNT"
fsfreeze -u "$MNT" || fail "cannot thaw $MNT"

KEYS=(pbitmap_plan_exec pbitmap_plan_meta_pages pbitmap_plan_skip_secure pbitmap_repeat
      pbitmap_plan_meta_skip_{owner,stale,gap} pbitmap_no_budget pbitmap_cache_{miss,hit})
declare -A S0 S1 D
REQS=0
# run_prog PROG [AS]: PROG run as AS; or by root, with the pbitmap
# tracepoints on (for meta_detail)
run_prog() {
	if [ -n "${2:-}" ]; then
		# the shell, not setpriv, execs $1: without root's capabilities
		setpriv --reuid="$(id -u "$2")" --regid="$(id -g "$2")" --clear-groups \
			--inh-caps=-all /bin/sh -c 'exec "$0"' "$W/$1" || fail "$1 run as $2 failed"
	else
		: >$T/trace
		echo 1 >$T/events/pbitmap/enable
		"$W/$1" || fail "$1 failed"
		echo 0 >$T/events/pbitmap/enable
	fi
}
# cold_exec PROG [AS]: D, the counters' change over a cold run_prog; REQS,
# the disk's read requests meanwhile (metalib.sh); SEEN, D in words
cold_exec() {
	sleep 1.1	# past the plan's repeat window of the exec before
	meta_cold_exec run_prog "$@"
	SEEN=
	for k in "${KEYS[@]}"; do SEEN+=" ${k#pbitmap_} ${D[$k]}"; done
}
for k in "${KEYS[@]}"; do
	[ -n "$(grep "^$k " /proc/vmstat)" ] || fail "no counter $k in /proc/vmstat"
done

# ---- before the interpreter's look-up -----------------------------------------------
T=/sys/kernel/tracing
[ -d $T/events/pbitmap ] || fail "no pbitmap events in $T"
# the pbitmap tracepoints of the last exec and its counters, on a failure
meta_detail() {
	echo "counters:$SEEN; trace: $(grep -v '^#' $T/trace | cut -c1-300 | tr '\n' ' ')"
}
meta_rounds prog
echo "before the interpreter's look-up: $WITH read requests in three cold execs, $WITHOUT without"

# ---- secure execs ---------------------------------------------------------------------
echo 1 >/proc/sys/vm/pbitmap_plan_meta
cp -a prog plain
cp -a prog setuid && chmod 4755 setuid
cp -a prog setgid && chmod 2755 setgid
# cap_net_raw permitted, as setcap(8) writes it (VFS_CAP_REVISION_2; the
# guest has no libcap2-bin)
cp -a prog capped
python3 -c 'import os, struct; os.setxattr("capped", "security.capability",
	struct.pack("<5I", 0x02000000, 1 << 13, 0, 0, 0))' || fail "cannot give capped a file capability"
cp -a prog exec-only && chmod 0711 exec-only
for c in plain setuid setgid capped exec-only; do
	cold_exec "$c" nobody
	if [ "$c" = plain ]; then
		[ "${D[pbitmap_plan_exec]}" = 1 ] && [ "${D[pbitmap_plan_meta_pages]}" -gt 0 ] ||
			fail "plain run by nobody: plan_exec ${D[pbitmap_plan_exec]}, meta_pages ${D[pbitmap_plan_meta_pages]}; want 1 and some"
	else
		[ "${D[pbitmap_plan_skip_secure]} ${D[pbitmap_plan_exec]} ${D[pbitmap_plan_meta_pages]}" = "1 0 0" ] ||
			fail "$c run by nobody: skip_secure ${D[pbitmap_plan_skip_secure]}, plan_exec ${D[pbitmap_plan_exec]}, meta_pages ${D[pbitmap_plan_meta_pages]}; want 1 0 0"
	fi
	echo "ok: $c run by nobody: meta_pages ${D[pbitmap_plan_meta_pages]}, skip_secure ${D[pbitmap_plan_skip_secure]}"
done
echo "PASS: a plan's metadata table read before the interpreter's look-up on $(uname -r)"
