#!/bin/bash
# Guest test: a crash at any point of the kernel's learned writes leaves
# every record accepted, the old generation or the new one, as xfstests
# proves crash consistency: every write of a learning storm on an ext4
# filesystem is recorded by dm-log-writes (drivers/md/dm-log-writes.c), and
# replay-log.py (beside this script) replays the log onto the filesystem as
# it was before, one logged write at a time, and for the writes that cover a
# record one sector at a time too (a crash tearing the write), checking at
# each point that:
#   - each stamped file (copies of learn-pages stamped -g 16, records of
#     five sectors) has a valid current slot, its generation never going
#     back;
#   - every byte of each file outside its .pbitmap section is unchanged;
#   - e2fsck -fn passes once the journal is replayed.
# The storm: 4 generations per file, interleaved, learn=1, interval 0, a
# flush after each; a sync after each of the first two, none between the
# last two, so that a file's two slots are written one right after the
# other (the kernel must put the current slot on the disk before it
# writes the other: otherwise writeback writes both at once and one crash
# tears both, which the replay sees as a generation going back).  At the
# end the files' records must have all 4 generations (runs 4).  Needs BLK_DEV_DM, DM_LOG_WRITES and dmsetup.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/testbed-lib.sh
. "$HERE/testbed-lib.sh"
cold_begin t-learn-crash
VM=/proc/sys/vm
trap 'learn_reset; cold_reset; tb_cleanup; cd /; rm -rf "$W"' EXIT
cold_need_sysctls pbitmap_enabled pbitmap_learn pbitmap_learn_interval_s pbitmap_learn_flush
cold_need_counters pbitmap_learn_written
cold_missing
command -v dmsetup >/dev/null || fail "no dmsetup in the guest (make-image installs it)"
grep -qw log-writes <(dmsetup targets) || modprobe dm-log-writes 2>/dev/null || true
grep -qw log-writes <(dmsetup targets) || fail "no log-writes device-mapper target (CONFIG_DM_LOG_WRITES)"

gcc -std=c11 -O2 -Wall -Wextra -Werror -o learn-pages "$HERE/learn-pages.c" ||
	fail "cannot build learn-pages"
truncate -s 48M data.img && truncate -s 128M log.img
mkfs.ext4 -q -F -b 4096 data.img || fail "mkfs.ext4"
mkdir mnt
mount -o loop data.img mnt || fail "cannot mount data.img"
for f in lp1 lp2; do
	# No plan area (executables get one by default): replay-log.py checks
	# records of bitmaps only, as the test's five-sector records.
	cp learn-pages mnt/$f && pbitmap add -q -g 16 --plan-size 0 mnt/$f || fail "cannot stamp mnt/$f"
done
specs=()
for f in lp1 lp2; do
	section=$(record_section mnt/$f) || fail "mnt/$f: no record section (pbitmap show --json)"
	read -r off size <<<"$section"
	specs+=(--file "$f:$off:$size:")
done
umount mnt
for i in 0 1; do
	f=lp$((i + 1))
	blocks=$(debugfs -R "blocks /$f" data.img 2>/dev/null | tr ' ' ',' | sed 's/,$//')
	[ -n "$blocks" ] || fail "debugfs lists no blocks of /$f"
	specs[$((2 * i + 1))]+=$blocks
done
cp data.img base.img

dloop=$(losetup -f --show data.img) && tb_defer "losetup -d $dloop"
lloop=$(losetup -f --show log.img) && tb_defer "losetup -d $lloop"
dmsetup create pbitmap-lw --table "0 $(blockdev --getsz "$dloop") log-writes $dloop $lloop" ||
	fail "cannot create the log-writes target"
tb_defer "dmsetup remove pbitmap-lw"
# No udev in the guest: make the /dev/mapper node by hand.
dmsetup mknodes pbitmap-lw || fail "cannot make the node of the log-writes target"
mount /dev/mapper/pbitmap-lw mnt || fail "cannot mount the logged device"
tb_defer "umount '$W/mnt'"
echo 1 >$VM/pbitmap_enabled
echo 1 >$VM/pbitmap_learn
echo 0 >$VM/pbitmap_learn_interval_s
w0=$(vmstat_counter pbitmap_learn_written)
round=0
for mode in A B A B; do
	round=$((round + 1))
	for f in lp1 lp2; do
		./mnt/$f $mode >/dev/null || fail "mnt/$f $mode failed"
		echo 1 >$VM/pbitmap_learn_flush
		[ $round -gt 2 ] || sync
	done
done
sync
dmsetup message pbitmap-lw 0 mark storm-done
written=$(($(vmstat_counter pbitmap_learn_written) - w0))
r1=$(pbitmap show --json mnt/lp1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["runs"])')
r2=$(pbitmap show --json mnt/lp2 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["runs"])')
umount mnt
dmsetup remove pbitmap-lw
echo "storm: $written generations written; runs lp1=$r1 lp2=$r2"
[ "$r1" = 4 ] && [ "$r2" = 4 ] || fail "the storm did not write 4 generations into each file"
python3 "$HERE/replay-log.py" --log "$lloop" --base base.img --work work.img --fsck "${specs[@]}" |
	tee replay.out
grep -q "; 0 failures$" replay.out || fail "a replayed point left a record rejected, a byte outside it changed or e2fsck unhappy"
grep -q "final runs lp1=4 lp2=4" replay.out || fail "the replay did not end at 4 generations"
echo PASS
