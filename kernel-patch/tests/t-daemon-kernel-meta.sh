#!/bin/bash
# Guest test, on the series' kernel: pbitmapd beside a kernel that
# prefetches (vm.pbitmap_enabled=1) reads a program's metadata list and
# nothing else (child.c, meta_only_child()).  The kernel reads the
# program's pages and its plan at the exec; the blocks its look-ups need
# are what it does not read in one batch.
#
#   - A stamped program of root's that, given "walk", stats 240 files in
#     24 fresh directories, and given "idle", exits at once; its metadata
#     list made here from where the filesystem keeps what the walk looks
#     up: the directories' blocks (FIEMAP, filefrag) and the inode-table
#     blocks of every inode on the way (debugfs imap).  This kernel has no
#     BPF, so the daemon cannot learn lists here (t-daemon-meta.sh learns
#     one on Debian's kernel).
#   - With the list: after a drop, an idle exec under the daemon counts
#     meta_read 1, at least the list's bytes asked for, skip_kernel, and
#     no exec read ahead (prefetched, files and bytes 0); the stats that
#     follow make at most a third of the read requests they make after an
#     idle exec under the daemon with PBITMAP_DAEMON_METADATA=no.
#   - A stamped data file opened while the kernel prefetches is left to
#     it: skip_kernel counts it, no child reads it.
#   - With vm.pbitmap_enabled=0 the same exec is the daemon's own again:
#     prefetched 1 (its pages and the list), and so is the data file's
#     open: data_prefetched 1 (the kernel needs CONFIG_FHANDLE for that,
#     as Debian's has: pbitmapd opens an open event's file by its handle).
set -euo pipefail
W=/var/tmp/t-daemon-kernel-meta
DAEMON_KERNEL=patched
source "$(dirname "$0")/daemonlib.sh"
was_enabled=$(cat /proc/sys/vm/pbitmap_enabled)
trap 'stop_daemon; echo "$was_enabled" >/proc/sys/vm/pbitmap_enabled' EXIT
for t in filefrag debugfs; do command -v $t >/dev/null || fail "$t is not installed (e2fsprogs)"; done
SRC=$(findmnt -no SOURCE --target "$W")
[ "$(findmnt -no FSTYPE --target "$W")" = ext4 ] || fail "$W is not on ext4: the list is made for ext4"
[ "$(stat -f -c %S "$W")" = 4096 ] || fail "$W's filesystem has $(stat -f -c %S "$W")-byte blocks: a list counts 4 KiB pages"
walker_disk
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }

make_walker
./walker walk || fail "the walker does not find its 240 files"
pbitmap add -q walker || fail "cannot stamp the walker"
head -c 1M /dev/zero >data && pbitmap add -q data && pbitmap set -q --pages 10-20 data ||
	fail "cannot stamp a data file"

# ---- the list: the blocks the walk looks up -----------------------------------------
sync
dirs=("$W" "$W/tree" "$W"/tree/d*)
# shellcheck source=kernel-patch/tests/metalib.sh
. "$HERE/metalib.sh"
blocks() { dir_blocks "${dirs[@]}"; }
imaps() { inode_blocks "$SRC" "${dirs[@]}" "$W"/tree/d*/f*; }
{ blocks; imaps; } | sort -n -u >pages.txt
dblocks=$(blocks | wc -l) iblocks=$(imaps | sort -u | wc -l)
[ "$dblocks" -ge 26 ] && [ "$iblocks" -ge 10 ] ||
	fail "$dblocks directory blocks and $iblocks inode-table blocks found: wanted at least 26 and 10"
pages=$(wc -l <pages.txt)
ino=$(stat -c %i walker)
IFS=: read -r maj min < <(stat -c %Hd:%Ld walker)
fsid=$(printf '%016x' "0x$(stat -f -c %i walker)")
mtime=$(stat -c %.9Y walker)
mkdir -m 700 state
list=state/metadata-$maj:$min-$ino
{
	printf 'pbitmapd-metadata 1\ndevice %s\nfsid %s %s\nprogram %s %s %s\n' "$maj:$min" "${fsid:0:8}" \
		"${fsid:8:8}" "$(stat -c %s walker)" "${mtime%.*}" "$((10#${mtime#*.}))"
	awk 'NR > 1 && $1 != prev + 1 { print start, prev - start + 1, 0; start = $1 }
	     NR == 1 { start = $1 } { prev = $1 } END { print start, prev - start + 1, 0 }' pages.txt
} >"$list"
chmod 600 "$list"
echo "list: $pages pages ($dblocks directory blocks, $iblocks inode-table blocks) in $(($(wc -l <"$list") - 4)) runs"

printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\n' >read.conf
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_METADATA=no\n' >off.conf

# ---- beside the kernel's prefetch ---------------------------------------------------
echo 1 >/proc/sys/vm/pbitmap_enabled
WALK="" META=""
walk_after_idle() {	# CONF: WALK, the walk's read requests after an idle exec; META, counters
	start_daemon "$1"
	cold
	./walker idle
	# the walker's exec, not cold()'s sync (execs counts every exec): the
	# one stamped exec here, counted skip_kernel with or without a child
	settle skip_kernel 1
	META="$(counter meta_read) $(counter meta_bytes) $(counter skip_kernel) $(counter prefetched)"
	META+=" $(counter files) $(counter bytes)"
	walk_reads
}
walk_after_idle off.conf
off=$WALK
read -r m _ k p _ <<<"$META"
stop_daemon
[ "$m $p" = "0 0" ] && [ "$k" -ge 1 ] ||
	fail "PBITMAP_DAEMON_METADATA=no: meta_read $m, skip_kernel $k, prefetched $p; want 0, at least 1, 0"
walk_after_idle read.conf
on=$WALK
read -r m b k p f by <<<"$META"
[ "$m $p $f $by" = "1 0 0 0" ] && [ "$k" -ge 1 ] ||
	fail "meta_read $m, skip_kernel $k, prefetched $p, files $f, bytes $by; want 1, at least 1, 0, 0, 0 (the list, nothing else)"
[ "$b" -ge $((pages * 4096)) ] || fail "meta_bytes $b: less than the list's $pages pages"
echo "the list read beside the kernel: $b bytes asked for, no exec read ahead by the daemon"
[ "$off" -ge 6 ] || fail "the walk without the list made $off read requests: too few to compare"
[ $((on * 3)) -le "$off" ] ||
	fail "the walk after the list was read made $on read requests, without it $off: want at most a third"
echo "the walk made $on read requests after the list was read, $off without"
# a stamped data file's open, by this shell (no exec): the kernel's,
# counted skip_kernel, no child started.  First the walk's exec counted
# (its skip_kernel 2): an event that starts no child reaches the status
# file up to a second later, and a count read before it did would let the
# walk's exec stand for the open (the test passed so while the test bed's
# kernel had no open_by_handle_at(), and every open was dropped unseen)
settle skip_kernel 2
k0=$(counter skip_kernel)
: <data
settle skip_kernel $((k0 + 1))
[ "$(counter skip_kernel) $(counter data_prefetched)" = "$((k0 + 1)) 0" ] ||
	fail "a stamped data file's open: skip_kernel $(counter skip_kernel), data_prefetched $(counter data_prefetched); want $((k0 + 1)) and 0"
echo "a stamped data file's open is left to the kernel"
stop_daemon

# ---- the kernel's prefetch off: the daemon's own again -------------------------------
echo 0 >/proc/sys/vm/pbitmap_enabled
start_daemon read.conf
cold
./walker idle
settle prefetched 1
: <data
settle data_prefetched 1
read -r m p k d <<<"$(counter meta_read) $(counter prefetched) $(counter skip_kernel) $(counter data_prefetched)"
stop_daemon
[ "$m $p $k $d" = "1 1 0 1" ] ||
	fail "vm.pbitmap_enabled=0: meta_read $m, prefetched $p, skip_kernel $k, data_prefetched $d; want 1 1 0 1"
echo "with vm.pbitmap_enabled=0 the daemon reads the program and the data file too"
echo "PASS: pbitmapd reads only metadata lists beside the prefetching kernel on $(uname -r)"
