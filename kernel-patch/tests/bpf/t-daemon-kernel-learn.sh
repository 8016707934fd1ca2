#!/bin/bash
# Guest test, on the series' kernel built with BPF (make vm-bpf-check):
# pbitmapd's learning beside a kernel that learns too (vm.pbitmap_learn),
# where the daemon follows a program of root's for its metadata list alone
# and leaves its pages to the kernel (learn.c, learn.bpf.c).
#
#   - vm.pbitmap_learn=0, the kernel prefetching: the walker (root's,
#     stamped) is allowed at its first exec and followed at its second;
#     the BPF side sends that run's faults (learn_faults grows).
#   - vm.pbitmap_learn=1: a run of a user's program allowed before
#     (walker-u, nobody's) is not followed (learn_skip_switched: a user's
#     program has no list to learn), and neither are its later runs
#     (learners unchanged: its entry is gone, and no child reads its
#     record again).
#   - The walker's runs once its record has been read again are followed
#     for the list alone: learners grows, learn_faults does not, and the
#     list is written (meta_learned).
#   - A join gap under 256 KiB (PBITMAP_DAEMON_METADATA=auto, the
#     default): lists are not read, so beside the learning kernel the
#     walker is not followed either (learners and meta_read unchanged).
#   - Held execs (PBITMAP_DAEMON_HOLD_EXEC_MS) beside the prefetching
#     kernel: the walker, with its list, is held (held and meta_read grow);
#     a stamped program of root's without a list, whose child only reads
#     its record for learning, is not (held unchanged, though its child
#     ran: its runs are followed).
set -euo pipefail
W=/var/tmp/t-daemon-kernel-learn
DAEMON_KERNEL=patched
source "$(dirname "$0")/daemonlib.sh"
[ -e /sys/kernel/btf/vmlinux ] || fail "$(uname -r) has no BTF: make vm-bpf-check boots the kernel of make kernel BPF=1"
was_enabled=$(cat /proc/sys/vm/pbitmap_enabled) was_learn=$(cat /proc/sys/vm/pbitmap_learn)
trap 'stop_daemon; echo "$was_enabled" >/proc/sys/vm/pbitmap_enabled; echo "$was_learn" >/proc/sys/vm/pbitmap_learn' EXIT
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# run PROGRAM [COMMAND...]: PROGRAM's exec taken by the daemon (skip_kernel:
# every stamped exec beside the prefetching kernel), and no child at work
run() {
	local k
	k=$(counter skip_kernel)
	"${@:2}" "$1" walk 1 || fail "$1 failed"
	settle skip_kernel $((k + 1))
}

make_walker
./walker walk || fail "the walker does not find its 240 files"
cp walker walker-u && cp walker walker-2 && chown 65534:65534 walker-u
for p in walker walker-u walker-2; do pbitmap add -q "$p" || fail "cannot stamp $p"; done
# the gap pinned: auto reads and learns lists beside the kernel only from 256 KiB
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN_INTERVAL_S=0\nPBITMAP_DAEMON_LEARN_PLANS=no\n' >base.conf
cp base.conf learn.conf && echo PBITMAP_DAEMON_JOIN_GAP_KB=256 >>learn.conf
cp learn.conf hold.conf && echo PBITMAP_DAEMON_HOLD_EXEC_MS=1000 >>hold.conf
cp base.conf narrow.conf && echo PBITMAP_DAEMON_JOIN_GAP_KB=32 >>narrow.conf

# ---- the kernel prefetches, pbitmapd learns the pages -----------------------------------
echo 1 >/proc/sys/vm/pbitmap_enabled
echo 0 >/proc/sys/vm/pbitmap_learn
start_daemon learn.conf
[ "$(counter learning)" = 1 ] || fail "learning is not on ($(counter learning))"
run ./walker			# its record read: followed from now on
run ./walker-u "${NOBODY[@]}"
f0=$(counter learn_faults)
run ./walker
[ "$(counter learners)" = 1 ] || fail "vm.pbitmap_learn=0: the walker's second run not followed (learners $(counter learners))"
[ "$(counter learn_faults)" -gt "$f0" ] || fail "vm.pbitmap_learn=0: no fault of the walker's run received"
echo "vm.pbitmap_learn=0: the walker's run followed, $(($(counter learn_faults) - f0)) faults received"

# ---- the kernel learns too ---------------------------------------------------------------
echo 1 >/proc/sys/vm/pbitmap_learn
l0=$(counter learners) s0=$(counter learn_skip_switched)
run ./walker-u "${NOBODY[@]}"
settle learn_skip_switched $((s0 + 1))	# counted when the BPF exec event is read
[ "$(counter learn_skip_switched)" = $((s0 + 1)) ] && [ "$(counter learners)" = "$l0" ] ||
	fail "nobody's program allowed before vm.pbitmap_learn=1: learn_skip_switched $(counter learn_skip_switched), learners $(counter learners); want $((s0 + 1)), $l0"
run ./walker-u "${NOBODY[@]}"
run ./walker-u "${NOBODY[@]}"
[ "$(counter learners)" = "$l0" ] || fail "nobody's program followed again after vm.pbitmap_learn=1 (learners $(counter learners))"
# its entry is gone: the later runs reach no learner, not the switched path again
[ "$(counter learn_skip_switched)" = $((s0 + 1)) ] ||
	fail "nobody's program's entry kept after the switch: learn_skip_switched $(counter learn_skip_switched), want $((s0 + 1))"
echo "vm.pbitmap_learn=1: nobody's program is no longer followed"

run ./walker			# the run that finds the switch; its child allows it again
l0=$(counter learners) f0=$(counter learn_faults) m0=$(counter meta_learned)
cold; run ./walker
cold; run ./walker
settle meta_learned $((m0 + 2))
[ "$(counter learners)" = $((l0 + 2)) ] || fail "the walker's runs under vm.pbitmap_learn=1: learners $(counter learners), want $((l0 + 2))"
[ "$(counter learn_faults)" = "$f0" ] ||
	fail "the walker's meta-only runs sent $(($(counter learn_faults) - f0)) faults: the kernel learns its pages"
echo "vm.pbitmap_learn=1: the walker followed for its list alone, no fault sent, $(counter meta_learned) lists written"
stop_daemon

# ---- a narrow join gap: lists neither read nor learned -----------------------------------
start_daemon narrow.conf
grep -q "metadata lists not read: a join gap under 256 KiB" "$W/daemon.log" ||
	fail "a 32 KiB gap: no note that lists are not read"
run ./walker			# its record read: not followed
l0=$(counter learners) r0=$(counter meta_read)
cold; run ./walker
cold; run ./walker
[ "$(counter learners)" = "$l0" ] && [ "$(counter meta_read)" = "$r0" ] ||
	fail "a 32 KiB gap beside the learning kernel: learners $(counter learners), meta_read $(counter meta_read); want $l0, $r0"
echo "a 32 KiB gap: the walker's list neither read nor learned"
stop_daemon

# ---- held execs ----------------------------------------------------------------------------
start_daemon hold.conf
h0=$(counter held) r0=$(counter meta_read)
cold; run ./walker
[ "$(counter held)" = $((h0 + 1)) ] && [ "$(counter meta_read)" = $((r0 + 1)) ] ||
	fail "the walker with its list: held $(counter held), meta_read $(counter meta_read); want $((h0 + 1)), $((r0 + 1))"
# walker-2's first run is followed only if its child's report came before
# the exec reached the BPF side (not held, the exec does not wait for it);
# its second is, once that child has read its record
h0=$(counter held) l0=$(counter learners)
run ./walker-2			# no list: its child reads the record only
run ./walker-2
[ "$(counter held)" = "$h0" ] || fail "walker-2, with no list, was held (held $(counter held), want $h0)"
[ "$(counter learners)" -ge $((l0 + 1)) ] ||
	fail "walker-2's runs not followed (learners $(counter learners), want at least $((l0 + 1))): its first exec's child did not read its record"
echo "held: an exec with a list to read, not one whose child reads only the record"
echo "PASS: pbitmapd learns metadata lists alone beside the learning kernel on $(uname -r)"
