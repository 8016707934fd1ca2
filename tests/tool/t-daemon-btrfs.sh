#!/bin/bash
# t-daemon-btrfs: pbitmapd reads a plan's files on btrfs, Fedora's default
# filesystem.  Its readers look names up one component at a time and stop
# at any file not on a local filesystem, known by device (confine.c); on
# btrfs a file's device is that of its subvolume, neither the one
# /proc/self/mountinfo gives for the filesystem nor, for a subvolume
# inside the one mounted, any known in advance.  Before the fix every
# look-up on btrfs stopped there (EXDEV): nothing of a plan or of a
# program's libraries was read.
#
# A btrfs image, its subvolume sv mounted as mnt (as Fedora mounts its
# root), with a subvolume nested inside (mnt/nested, not mounted).  On it:
# prog, a copy of /bin/sleep planned with A.so (a copy of libc, pages 0-1
# marked) in mnt, B (10000 bytes, whole) in mnt/nested, and two files
# that are not on a local filesystem (tmpfs stands for NFS or FUSE here):
# t/C, on a tmpfs mounted at mnt/t, and cov/D, on a tmpfs mounted over a
# second mount of sv at cov (a user's FUSE mount over their USB stick: the
# mount's device is the tmpfs's, not the btrfs's).  And E, a file of the
# subvolume, mnt/E0, bind-mounted at mnt/E (as a container gets its
# /etc/resolv.conf): local, and the root of a mount, which the walk's
# last open must enter (confine.c: walk_open_last(), RESOLVE_NO_XDEV only
# where the name was no mount's root when checked).  The daemon
# (ASan/UBSan) under strace, prog run:
#   - the plan is read: A.so 0-1, B and E, by one reader (fadvise64);
#   - C and D are not (skip_fs 2).

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need mkfs.btrfs btrfs mount umount losetup truncate strace ldd
[[ $(id -u) == 0 ]] || fail "must run as root: a loop device, and pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
truncate -s 160M fs.img && mkfs.btrfs -q fs.img >/dev/null && mkdir top mnt || fail "cannot make fs.img"
loop=$(losetup -f --show fs.img) || fail "cannot attach fs.img to a loop device"
at_exit "losetup -d $loop"
mount "$loop" top || fail "cannot mount $loop"
btrfs -q subvolume create top/sv >/dev/null && umount top || fail "cannot make the subvolume sv"
mount -o subvol=sv "$loop" mnt || fail "cannot mount subvolume sv of $loop"
at_exit "umount $d/mnt 2>/dev/null"
btrfs -q subvolume create mnt/nested >/dev/null || fail "cannot make the subvolume mnt/nested"
mdev=$(awk -v m="$d/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)
read -r sdev ndev <<<"$(stat -c '%Hd:%Ld' mnt mnt/nested | tr '\n' ' ')"
[[ $mdev != "$sdev" && $sdev != "$ndev" ]] ||
	fail "the case needs three devices: mountinfo's $mdev, the subvolume's $sdev, the nested one's $ndev"

libc=$(ldd /bin/sleep | awk '/libc\.so/ { print $3 }')
[[ -f $libc ]] || fail "no libc in ldd /bin/sleep: $(ldd /bin/sleep)"
cp "$libc" mnt/A.so && head -c 10000 /dev/urandom >mnt/nested/B && cp /bin/sleep mnt/prog || fail "cp"
mkdir mnt/t cov && mount -t tmpfs t mnt/t && at_exit "umount $d/mnt/t" &&
	mount -o subvol=sv "$loop" cov && at_exit "umount $d/cov" &&
	mount -t tmpfs cov cov && at_exit "umount $d/cov" || fail "cannot mount the tmpfs file systems"
head -c 10000 /dev/urandom >mnt/t/C && head -c 10000 /dev/urandom >cov/D || fail "cannot write C and D"
head -c 10000 /dev/urandom >mnt/E0 && : >mnt/E && mount --bind mnt/E0 mnt/E && at_exit "umount $d/mnt/E" ||
	fail "cannot bind-mount mnt/E0 at mnt/E"
"$PBITMAP" add -q mnt/A.so && "$PBITMAP" set -q --pages 0-1 mnt/A.so &&
	"$PBITMAP" add -q --plan-size 4K mnt/prog &&
	"$PBITMAP" plan mnt/prog mnt/A.so mnt/nested/B mnt/t/C cov/D mnt/E || fail "cannot plan mnt/prog"

# Cached ranges read too (SKIP_CACHED=no): the test watches the reads of files
# its programs have just read themselves (the default: t-prefetch-cached).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_PLAN=yes\nPBITMAP_DAEMON_SKIP_CACHED=no\n' >on.conf
daemon_start on.conf -f -qq -y -e trace=fadvise64 -o trace
mnt/prog 3 || fail "mnt/prog does not run under the daemon"
for _ in $(seq 100); do (($(planned "$d/mnt/prog") == 1)) && [[ $(counter pending) == 0 ]] && break; sleep 0.1; done
daemon_stop
(($(planned "$d/mnt/prog") == 1)) || fail "mnt/prog was not read ahead through its plan: $(cat daemon.log)"
got=$(grep -oE "fadvise64\([0-9]+<$d/[^>]*>, [0-9]+, [0-9]+, POSIX_FADV_WILLNEED\) = 0" trace |
	sed -E "s|fadvise64\([0-9]+<$d/([^>]*)>, ([0-9]+), ([0-9]+).*|\1 \2 \3|" | tr '\n' ';')
[[ $got == "mnt/A.so 0 8192;mnt/nested/B 0 12288;mnt/E 0 12288;" && $(counter skip_fs) == 2 ]] ||
	fail "want A.so 0-1, nested/B and E read, skip_fs 2; read: '$got', skip_fs $(counter skip_fs): $(cat daemon.log)"
pass "a plan on a btrfs subvolume ($sdev, mounted from $mdev) and one nested in it ($ndev): read (A.so 0-1, nested/B);" \
	"a file bind-mounted into it too (E); not on a tmpfs inside it nor on one mounted over another mount of it (skip_fs 2)"
