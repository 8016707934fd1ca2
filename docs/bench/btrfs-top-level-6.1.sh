#!/bin/bash
# docs/bench/btrfs-top-level-6.1.sh: a guest job (kernel-patch/scripts/vm --job) on
# Debian 12's own 6.1: pbitmapd before and after 5b9c30a on a btrfs mounted from a
# subvolume (docs/bench/2026-12-05-btrfs-top-level-6.1.md)
set -u
J=/mnt/job
uname -r
for m in $(cat $J/modules/order); do insmod $J/modules/$m || echo "insmod $m failed"; done
grep -w btrfs /proc/filesystems || { echo "no btrfs"; exit 1; }
W=/root/w; mkdir -p $W; cd $W || exit 1
truncate -s 160M fs.img && mkfs.btrfs -q fs.img >/dev/null && mkdir top a || exit 1
loop=$(losetup -f --show fs.img) && mount $loop top && btrfs -q subvolume create top/sv >/dev/null || exit 1
python3 -c 'import fcntl, os, struct, sys
print("top generation", struct.unpack("l", fcntl.ioctl(os.open(sys.argv[1], os.O_RDONLY), 0x80087601, bytes(8)))[0])' top
umount top && mount -o subvol=sv $loop a || exit 1
head -c $((1 << 20)) /dev/urandom >a/D && pbitmap add -q a/D && pbitmap set -q --pages 0-7 a/D || exit 1
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\n' >on.conf
for d in old new; do
	sync; echo 1 >/proc/sys/vm/drop_caches
	$J/pbitmapd.$d -v -c on.conf -s $W/status.$d 2>log.$d &
	pid=$!
	for _ in $(seq 100); do [ -s status.$d ] && break; sleep 0.1; done
	exec 3<a/D
	sleep 3
	python3 $J/resident.py a/D 0-7 64-255 > res.$d
	exec 3<&-
	kill $pid; wait $pid
	echo "== $d: resident (0-7, 64-255): $(cat res.$d)"
	grep -E "a/D|btrfs|cannot|opens" log.$d
	grep -E "^(data_prefetched|skip_handle|opens) " status.$d
done
