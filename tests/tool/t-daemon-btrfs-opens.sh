#!/bin/bash
# t-daemon-btrfs-opens: pbitmapd reads a stamped data file ahead at its
# open on a btrfs mounted from a subvolume, as Fedora mounts / and /home.
# Its opens are reported by file handle, and fanotify refuses such a mark
# on a subvolume (EXDEV: the subvolume's filesystem ID is not its
# filesystem's); before the fix the daemon said "cannot watch opens of
# data files" at start and read no data file there.  The mark is now
# made through the filesystem's top level, opened by its handle
# (marks.c: opens_mark_target()), and covers every subvolume.
#
# A btrfs image, its subvolumes sv and sv2 mounted at a and b (a second
# mount of one filesystem: mountinfo's device is the same), and nested,
# a subvolume inside sv that is not mounted.  A stamped 1 MiB data file
# in each (pages 0-7 marked), their caches dropped; the daemon
# (ASan/UBSan) started, each file opened by this shell, which stays:
#   - each is read ahead as its opener opens it (a line each, its name
#     the path it was opened by; data_prefetched at least 3: the
#     machine's), its pages 0-7 cached and 64-255 not;
#   - nothing is said of opens not watched;
#   - the top level mounted at top, b unmounted, sv2's file opened as
#     top/sv2/D: read ahead, named there (the daemon follows the mount
#     table and drops b's entry; before, its handle was tried on b's
#     gone mount: skip_handle 1, nothing read);
#   - skip_handle is printed, not asserted: it counts every open event
#     whose file failed to open by its handle, on the root filesystem as
#     well, and a clean-clone make check of 7a7a11c (other tests mounting
#     and unmounting beside this one) counted 1 while top/sv2/D was read
#     ahead, named and cached as it should be.  A file not opened by its
#     handle is not read: the lines and residency above fail then.
#   - the top level is opened by a handle with its root directory's
#     generation (FS_IOC_GETVERSION, 3 or so after mkfs), not 0: before
#     Linux 6.2 btrfs compared it even when 0, and the mark failed
#     (ESTALE); 6.2 and later take either, so the strace of the handle is
#     what tells them apart here;
#   - SIGTERM: exit 0, no sanitizer report (LeakSanitizer does not run
#     under strace: t-daemon's leak check).

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need mkfs.btrfs btrfs mount umount losetup truncate python3
[[ $(id -u) == 0 ]] || fail "must run as root: a loop device, and pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
truncate -s 160M fs.img && mkfs.btrfs -q fs.img >/dev/null && mkdir top a b || fail "cannot make fs.img"
loop=$(losetup -f --show fs.img) || fail "cannot attach fs.img to a loop device"
at_exit "losetup -d $loop"
mount "$loop" top || fail "cannot mount $loop"
btrfs -q subvolume create top/sv >/dev/null && btrfs -q subvolume create top/sv2 >/dev/null &&
	btrfs -q subvolume create top/sv/nested >/dev/null || fail "cannot make the subvolumes"
# the top level's generation (FS_IOC_GETVERSION), which its handle must carry before Linux 6.2
gen=$(python3 -c 'import fcntl, os, struct, sys
print(struct.unpack("l", fcntl.ioctl(os.open(sys.argv[1], os.O_RDONLY), 0x80087601, bytes(8)))[0])' top) &&
	((gen != 0)) && umount top || fail "cannot read the top level's generation ('$gen', want non-zero) or umount it"
mount -o subvol=sv "$loop" a && mount -o subvol=sv2 "$loop" b || fail "cannot mount the subvolumes of $loop"
at_exit "umount $d/a $d/b 2>/dev/null"
files=(a/D b/D a/nested/D)
stamp_data "${files[@]}"
sync && echo 1 >/proc/sys/vm/drop_caches	# pbitmap's opens came before the daemon: not seen

printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\n' >on.conf
daemon_start on.conf -e trace=open_by_handle_at -o strace.log
fds=()
for f in "${files[@]}"; do
	exec {fd}<"$f" || fail "cannot open $f"	# held: the daemon reads for an opener still there
	at_exit "exec $fd<&-"
	fds+=("$fd")
done
# a line for each, named as opened (the mount of its subvolume, else the
# top level's mount, else the first mount of its filesystem: nested is
# inside a)
logged() { grep -q "^pbitmapd: $d/$1: opened by pid [0-9]*: data file, 1 extents" daemon.log; }
read_logged() {
	local f n=0
	for f in "${files[@]}"; do
		logged "$f" && n=$((n + 1))
	done
	echo $n
}
for _ in $(seq 200); do
	(($(read_logged) == 3 && $(counter data_prefetched) >= 3)) && [[ $(counter pending) == 0 ]] && break
	sleep 0.1
done
read -r p h <<<"$(counter data_prefetched) $(counter skip_handle)"
# at least 3: under make check other tests' data files are opened too
(($(read_logged) == 3 && p >= 3)) ||
	fail "read ahead at their opens: $(read_logged) logged, data_prefetched $p, skip_handle $h; want 3, at least 3: $(tr '\n' ' ' <status) $(cat daemon.log)"
# through the descriptors held (fd:N): an open of its own would be an open
# event the daemon might still be handling once b is unmounted below, and
# then its handle could not be opened there (skip_handle, seen in one run
# of make check of 5fe630d, the host loaded)
for i in "${!files[@]}"; do
	resident=$(python3 "$TOP/tests/lib/resident.py" "fd:${fds[i]}" 0-7 64-255)
	[[ $resident == "8 0" ]] || fail "${files[i]}: pages 0-7 and 64-255 resident: '$resident', want '8 0'"
done
if grep -E "cannot watch opens|opens of data files not watched" daemon.log; then
	fail "opens said not watched: $(cat daemon.log)"
fi
pass "btrfs subvolumes mounted (two) and nested: a stamped data file read ahead at its open in each (a line each, pages 0-7 cached and no other)"

# b unmounted with the top level mounted: sv2's file, opened as top/sv2/D,
# is opened by its handle through the top level's mount, named there; the
# entry of b's mount is dropped at the change, not tried (skip_handle)
mount "$loop" top || fail "cannot mount the top level of $loop"
at_exit "umount $d/top 2>/dev/null"
exec {fds[1]}<&-	# b/D's
# umount said "target is busy" once in make check (host loaded), right
# after the counters said the reads were done: most likely the daemon's
# reader of b/D, which closes its descriptors as it exits (not
# confirmed).  Up to 5 s; a daemon that kept b would still fail here,
# naming the descriptors into b.
for _ in $(seq 50); do
	umount b 2>/dev/null && break
	sleep 0.1
done
! mountpoint -q b ||
	fail "cannot unmount b in 5 s; descriptors into it: $(find /proc/[0-9]*/fd -lname "$d/b/*" 2>/dev/null | tr '\n' ' ')"
sync && echo 1 >/proc/sys/vm/drop_caches
sleep 2.1	# b/D's read is no longer "recent"; the mount changes seen
exec {fd}<top/sv2/D || fail "cannot open top/sv2/D"
at_exit "exec $fd<&-"
for _ in $(seq 200); do
	logged top/sv2/D && (($(counter data_prefetched) >= p + 1)) && [[ $(counter pending) == 0 ]] && break
	sleep 0.1
done
read -r p2 h <<<"$(counter data_prefetched) $(counter skip_handle)"
resident=$(python3 "$TOP/tests/lib/resident.py" "fd:$fd" 0-7 64-255)
logged top/sv2/D && ((p2 >= p + 1)) && [[ $resident == "8 0" ]] ||
	fail "b unmounted, top/sv2/D opened: data_prefetched $p -> $p2, skip_handle $h, pages 0-7 and 64-255 resident '$resident'; want a line for top/sv2/D, one more, '8 0': $(cat daemon.log)"
pass "a subvolume's mount gone, its file opened through the top level's: read ahead, named there (skip_handle $h)"
daemon_stop
# open_by_handle_at(FD, {handle_bytes=20, handle_type=77, f_handle="\x00\x01..."}, ...):
# the top level's (inode 256 of tree 5) with its generation; the data
# files' handles are of type 77 too, in their subvolumes' trees
python3 - strace.log "$gen" <<'EOF' || fail "the top level's handle does not carry its generation $gen: $(cat strace.log)"
import re, struct, sys
top, want = struct.pack("<QQ", 256, 5), struct.pack("<QQI", 256, 5, int(sys.argv[2]))
got = [m.group(1).encode("latin1").decode("unicode_escape").encode("latin1")
       for m in re.finditer(r'handle_type=77, f_handle="([^"]*)"', open(sys.argv[1]).read())]
tops = [h for h in got if h.startswith(top)]
sys.exit(0 if tops and all(h == want for h in tops) else "the top level's handles: %s" % [h.hex() for h in tops])
EOF
pass "the top level opened by a handle with its generation ($gen): as Linux before 6.2 needs"
