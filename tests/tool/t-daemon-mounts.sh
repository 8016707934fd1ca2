#!/bin/bash
# t-daemon-mounts: pbitmapd takes as local only what is mounted now, and
# only the mount mountinfo names.
#
#   - A btrfs unmounted gives its anonymous device (0:NN, mountinfo's) back,
#     and the next tmpfs, FUSE or NFS mount can be given it.  The daemon
#     once kept every device it had watched: its readers' walks then took
#     that tmpfs for the btrfs and read a plan's file on it.  Here a tmpfs
#     given the btrfs's device holds F, a file prog's plan names: not read
#     (skip_fs 1), while C, planned beside it in the test's directory, is
#     (one file of 12288 bytes read: the plan was followed).
#   - A mount is marked through its root as mountinfo gives its mount ID,
#     not through whatever its path leads to now.  The daemon once marked
#     by path: with a tmpfs mounted over a watched ext4 (a user's FUSE
#     mount over their USB stick), it marked the tmpfs's superblock for
#     execs, and every exec there came to it.  Here no mark of the
#     daemon's fanotify groups is on that tmpfs (/proc/PID/fdinfo).
#   - A mount hidden so is no way to its filesystem's files, and another
#     mount of it is: the ext4 is mounted at e2 too, and its data file D,
#     opened there once e is hidden, is read ahead (data_prefetched 1).
#
# The btrfs and the ext4 (at e, then e2) are mounted before the daemon
# starts; then the btrfs is unmounted, tmpfs file systems are mounted at
# t1, t2, ... until one is given the btrfs's device (or four are), and one
# over e.  An ext4 mounted at s last:
# once the daemon says it watches s, it has read the mount table of after
# the others.  prog, a copy of /bin/sleep on the test's directory, run.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need mkfs.btrfs mkfs.ext4 mount umount losetup truncate findmnt
[[ $(id -u) == 0 ]] || fail "must run as root: loop devices, and pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
need_local_dir "$d"
devno() { findmnt -n -o MAJ:MIN --mountpoint "$d/$1" | tail -1 | tr -d ' '; } # the top mount's at $d/$1
loop() { # loop IMAGE MKFS...: IMAGE attached, its loop device printed
	local dev

	truncate -s "$1" "$2" && "${@:3}" "$2" >/dev/null && dev=$(losetup -f --show "$2") ||
		fail "cannot make $2"
	at_exit "losetup -d $dev"
	echo "$dev"
}
bloop=$(loop 160M b.img mkfs.btrfs -q) eloop=$(loop 8M e.img mkfs.ext4 -q -F) sloop=$(loop 8M s.img mkfs.ext4 -q -F)
mkdir b e e2 s t1 t2 t3 t4 && cp /bin/sleep prog && "$PBITMAP" add -q --plan-size 4K prog ||
	fail "cannot make the mount points and prog"
mount "$bloop" b && at_exit "umount $d/b 2>/dev/null" && mount "$eloop" e && at_exit "umount $d/e" &&
	mount "$eloop" e2 && at_exit "umount $d/e2" || fail "cannot mount b, e and e2"
stamp_data e/D
bdev=$(devno b) && [[ -n $bdev ]] || fail "no mountinfo line for b"

# Cached ranges read too (SKIP_CACHED=no): the test watches the reads of files
# its programs have just read themselves (the default: t-prefetch-cached).
# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\nPBITMAP_DAEMON_READ_PLAN=yes\nPBITMAP_DAEMON_SKIP_CACHED=no\n' >on.conf
daemon_start on.conf
grep -q "^pbitmapd: $d/b: watching execs" daemon.log || fail "the btrfs at b is not watched: $(cat daemon.log)"

umount b || fail "cannot unmount b"
t= given=
for m in t1 t2 t3 t4; do
	mount -t tmpfs $m $m && at_exit "umount $d/$m" || fail "cannot mount a tmpfs at $m"
	given+=" $m $(devno $m)"
	[[ $(devno $m) == "$bdev" ]] && t=$m && break
done
[[ -n $t ]] || fail "no tmpfs was given the unmounted btrfs's device $bdev ($given):" \
	"another mount took it; the case cannot be made here"
mount -t tmpfs over e && at_exit "umount $d/e" || fail "cannot mount a tmpfs over e"
head -c 10000 /dev/urandom >"$t/F" && head -c 10000 /dev/urandom >C &&
	"$PBITMAP" plan prog C "$t/F" || fail "cannot plan prog with C and $t/F"
mount "$sloop" s && at_exit "umount $d/s" || fail "cannot mount s"
for _ in $(seq 100); do grep -q "^pbitmapd: $d/s: watching execs" daemon.log && break; sleep 0.1; done
grep -q "^pbitmapd: $d/s: watching execs" daemon.log || fail "s, mounted last, not watched in 10 s: $(cat daemon.log)"

# the daemon's superblock marks: "fanotify sdev:%x", the kernel's dev_t (major << 20 | minor)
over=$(devno e)
over_sdev=$(printf '%x' $(((${over%:*} << 20) | ${over#*:})))
sdevs=$(grep -ho "^fanotify sdev:[0-9a-f]*" /proc/"$DPID"/fdinfo/* 2>/dev/null | sort -u | tr '\n' ' ')
[[ -n $sdevs ]] || fail "no fanotify marks in /proc/$DPID/fdinfo"
[[ " $sdevs" != *" fanotify sdev:$over_sdev "* ]] ||
	fail "the tmpfs mounted over e ($over) is marked: $sdevs"
pass "a tmpfs mounted over a watched ext4 is not marked ($over; marks: $sdevs)"

./prog 1 || fail "prog does not run under the daemon"
for _ in $(seq 100); do (($(planned "$d/prog") == 1)) && [[ $(counter pending) == 0 ]] && break; sleep 0.1; done
(($(planned "$d/prog" "1 files, 1 extents, 12288 bytes") == 1 && $(counter skip_fs) == 1)) ||
	fail "$t/F, on a tmpfs given the unmounted btrfs's device $bdev, and C: want C alone read, skip_fs 1;" \
		"skip_fs $(counter skip_fs): $(cat daemon.log)"
pass "a plan's file on a tmpfs given an unmounted btrfs's device ($bdev) is not read (skip_fs 1); one beside it is"

sleep 2.1	# stamp_data's own opens of D: not "recent"
: <e2/D || fail "cannot open e2/D"
for _ in $(seq 100); do [[ $(counter data_prefetched) == 1 && $(counter pending) == 0 ]] && break; sleep 0.1; done
daemon_stop
[[ $(counter data_prefetched) == 1 && $(counter skip_handle) == 0 ]] ||
	fail "e2/D, e hidden: data_prefetched $(counter data_prefetched), skip_handle $(counter skip_handle); want 1, 0: $(cat daemon.log)"
pass "the ext4 hidden at e, its data file opened at e2: read ahead (data_prefetched 1)"
