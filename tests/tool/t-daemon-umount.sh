#!/bin/bash
# t-daemon-umount: a filesystem pbitmapd watches can be unmounted while it
# runs, and is watched again once mounted again.  The daemon once kept a
# descriptor of every watched filesystem's root open, to open its events'
# file handles on: "umount: target is busy" for a USB stick or a backup
# disk until it stopped.  And it looked at the mount table only at its
# start and at SIGHUP: a filesystem mounted again was not watched until
# told; it now polls the table (main.c: serve()).
#
# An ext4 image on a loop device (mounted again on it, it has the same
# device number and filesystem ID), a stamped data file on it:
#   - opened: read ahead (data_prefetched 1: its opens are watched);
#   - umount succeeds with the daemon running;
#   - mounted again, no SIGHUP, opened again: read ahead (data_prefetched
#     2), the open's file not failed by its handle (skip_handle +0 over
#     the open: an event of the old mount taken after its umount may
#     count one before it); the
#     daemon before the poll reads nothing;
#   - unmounted, mounted from a second loop device of the same image (a
#     disk back under another name: the same ID, another device number),
#     SIGHUP as well (the same look at the table), opened: read ahead there
#     (data_prefetched 3), not taken for a copy with the same UUID;
#   - SIGTERM: exit 0, no sanitizer report.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need mkfs.ext4 losetup mount umount truncate
[[ $(id -u) == 0 ]] || fail "must run as root: a loop device, and pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
truncate -s 32M fs.img && mkfs.ext4 -q -F fs.img && mkdir mnt || fail "cannot make fs.img"
loop=$(losetup -f --show fs.img) || fail "cannot attach fs.img to a loop device"
at_exit "losetup -d $loop"
mount "$loop" mnt || fail "cannot mount $loop"
at_exit "umount $d/mnt 2>/dev/null"
stamp_data mnt/data
sleep 2.1	# pbitmap's own opens of it: none counted, but not "recent" either

# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\n' >on.conf
daemon_start on.conf
read_logged() { grep -c "^pbitmapd: $d/mnt/data: opened by pid [0-9]*: data file, 1 extents" daemon.log; }
# read_settled N: the Nth read logged; then, as the reader logs before it
# reports and exits, counted and gone (pending 0): at most 10 s
read_settled() {
	for _ in $(seq 100); do (($(read_logged) == $1)) && break; sleep 0.05; done
	for _ in $(seq 50); do
		[[ $(counter data_prefetched) == "$1" && $(counter pending) == 0 ]] && break
		sleep 0.1
	done
}
: <mnt/data || fail "cannot open mnt/data"
read_settled 1
(($(read_logged) == 1)) || fail "mnt/data was not read ahead at its open: $(cat daemon.log)"
[[ $(counter data_prefetched) == 1 && $(counter pending) == 0 ]] ||
	fail "mnt/data's reader not done: $(tr '\n' ' ' <status)"
umount mnt 2>"$ERR" || fail "umount with pbitmapd running: $(cat "$ERR")"
pass "a watched filesystem unmounted while pbitmapd runs"

mount "$loop" mnt || fail "cannot mount $loop again"
sleep 2.1	# the last read of it is no longer "recent"; the mount seen long since
# An event of the old mount taken after its umount cannot open its handle
# (make check of ab40eb3: skip_handle 1 before this open): count from here.
h0=$(counter skip_handle)
: <mnt/data || fail "cannot open mnt/data"
read_settled 2
(($(read_logged) == 2)) && [[ $(counter data_prefetched) == 2 && $(counter skip_handle) == "$h0" ]] ||
	fail "mounted again: mnt/data read $(read_logged) times; want 2, data_prefetched 2, skip_handle $h0 (as before the open): $(tr '\n' ' ' <status) $(cat daemon.log)"
pass "mounted again, no SIGHUP: its data file read ahead at its open again (data_prefetched 2, skip_handle +0)"

# The same filesystem on another device (a disk back as sdc1, not sdb1):
# the same ID, the old one gone, so it is watched there now.
umount mnt || fail "cannot unmount mnt a second time"
loop2=$(losetup -f --show fs.img) || fail "cannot attach fs.img to a second loop device"
at_exit "losetup -d $loop2"
[[ $loop2 != "$loop" ]] || fail "the second loop device is the first"
mount "$loop2" mnt || fail "cannot mount $loop2"
kill -HUP "$DPID"
sleep 2.1
h0=$(counter skip_handle)
: <mnt/data || fail "cannot open mnt/data"
read_settled 3
daemon_stop
read -r p h <<<"$(counter data_prefetched) $(counter skip_handle)"
(($(read_logged) == 3 && p == 3 && h == h0)) ||
	fail "on another device: mnt/data read $(read_logged) times, data_prefetched $p, skip_handle $h: want 3, 3, $h0 (as before the open): $(cat daemon.log)"
if grep -q "not watched: it has the filesystem ID" daemon.log; then
	fail "the filesystem back on another device was taken for a copy: $(cat daemon.log)"
fi
umount mnt || fail "cannot unmount mnt after the daemon"
pass "back on another loop device and SIGHUP: watched there (data_prefetched 3, skip_handle +0)"
