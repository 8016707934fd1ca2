#!/bin/bash
# Guest test, on Debian's own 6.12 kernel (no pbitmap patch): pbitmapd
# learns on btrfs, Fedora's default filesystem.
#
# stat(2) gives a btrfs file the device of its subvolume; the kernel's
# inode, which the BPF side sees, carries the filesystem's (the one
# mountinfo and /proc/PID/maps give).  The program was made learnable by
# its stat(2) device and looked for by the other, so no run on btrfs was
# ever followed (learners 0), and a file's identity failed the writer's
# check.  learn.bpf.c now takes the subvolume's device as btrfs's own
# getattr does (root->anon_dev, through the btrfs module's BTF).
#
# btrfs.ko and what it needs are loaded here, from the modules beside the
# test (stock-kernel's test-modules), and unloaded at the end: the other
# guest tests run, as most machines do, without btrfs.  A btrfs image
# (loop), its subvolume sv mounted as mnt (as Fedora mounts its root), a
# subvolume nested inside (mnt/nested, not mounted): three devices.
# mnt/mapper, a stamped program (not PIE: its mappings are below
# 0x10000000, which /proc/PID/maps pads with zeros and map_files names
# without), maps mnt/nested/data (1 MiB, stamped)
# and touches every 16th page; each is the first file of its subvolume,
# so both are inode 257 (btrfs numbers each subvolume's files alike, and
# /proc/PID/maps gives both the filesystem's device: learn.c's
# map_name() tells them apart).  The daemon starts once btrfs is loaded.
# A daemon started before btrfs was loaded says, when it starts to
# watch the btrfs, that it cannot learn there (pbitmapd(8)).
# The mapper's first run makes it learnable; its second is learned: both
# files get a generation (learn_written +2, learn_skip_changed 0), the
# data file's has the 16 pages touched, and both records verify.
set -euo pipefail
W=/var/tmp/t-daemon-learn-btrfs
source "$(dirname "$0")/daemonlib.sh"
[ -e /sys/kernel/btf/vmlinux ] || fail "$(uname -r) has no BTF: learning cannot load"
command -v mkfs.btrfs >/dev/null || fail "no mkfs.btrfs in the guest (make-image: btrfs-progs)"

loaded=()
cleanup() {
	stop_daemon
	umount "$W/mnt" "$W/top" 2>/dev/null || true
	[ -z "${loop:-}" ] || losetup -d "$loop" 2>/dev/null || true
	for ((i = ${#loaded[@]} - 1; i >= 0; i--)); do rmmod "${loaded[i]}" 2>/dev/null || true; done
}
loop=
trap cleanup EXIT
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN_INTERVAL_S=0\n' >owner.conf
# A daemon started before btrfs is loaded cannot learn its files: told at
# the SIGHUP that makes it watch the btrfs mounted since.
grep -qw btrfs /proc/filesystems && fail "btrfs is loaded before the test loads it"
start_daemon owner.conf -v
[ "$(counter learning)" = 1 ] || fail "learning is not on ($(counter learning)): $(cat daemon.log)"
# btrfs.ko and its dependencies, in order, unless in already
[ -s "$HERE/modules/order" ] || fail "no modules beside the test ($HERE/modules/order: stock-kernel's test-modules)"
while read -r ko; do
	name=${ko%.ko}; name=${name//-/_}
	[ -d "/sys/module/$name" ] && continue
	# a driver for hardware the guest lacks (crc32c-intel: No such device)
	# may fail; btrfs.ko then says whether what it needs is in
	if insmod "$HERE/modules/$ko" 2>insmod.err; then
		loaded+=("$name")
	elif [ "$ko" = btrfs.ko ]; then
		fail "insmod btrfs.ko: $(cat insmod.err)"
	fi
done <"$HERE/modules/order"
runs() { pbitmap show --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["runs"])'; }
newest() {	# the pages of the newest generation
	pbitmap show "$1" | awk '$1 == "0" && NF >= 3 { print $2; exit }'
}

truncate -s 160M fs.img && mkfs.btrfs -q fs.img >/dev/null && mkdir top mnt || fail "cannot make fs.img"
loop=$(losetup -f --show fs.img) || fail "cannot attach fs.img to a loop device"
mount "$loop" top || fail "cannot mount $loop"
btrfs -q subvolume create top/sv >/dev/null && umount top || fail "cannot make the subvolume sv"
mount -o subvol=sv "$loop" mnt || fail "cannot mount subvolume sv of $loop"
btrfs -q subvolume create mnt/nested >/dev/null || fail "cannot make the subvolume mnt/nested"
grep -qw btrfs /proc/filesystems || fail "no btrfs in $(uname -r) once its modules are loaded"
# a btrfs module without BTF would leave learn.bpf.c its filesystem's device
[ ! -e /sys/module/btrfs/initstate ] || [ -e /sys/kernel/btf/btrfs ] ||
	fail "btrfs.ko is loaded without BTF (/sys/kernel/btf/btrfs)"
# said as the filesystem is first mounted (the daemon follows the mount
# table: top, if it saw that mount before its umount, else mnt), or at
# SIGHUP, the same look at the table
kill -HUP "$DPID"
said() { grep -qE "/(top|mnt): its files are not learned: btrfs was loaded after" daemon.log; }
for _ in $(seq 100); do said && break; sleep 0.1; done
said || fail "a daemon started before btrfs was loaded did not say, as it was mounted or at SIGHUP, that it cannot learn there: $(cat daemon.log)"
stop_daemon
mdev=$(awk -v m="$W/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)
read -r sdev ndev <<<"$(stat -c '%Hd:%Ld' mnt mnt/nested | tr '\n' ' ')"
[[ $mdev != "$sdev" && $sdev != "$ndev" ]] ||
	fail "the case needs three devices: mountinfo's $mdev, the subvolume's $sdev, the nested one's $ndev"

# The mapper sleeps a second before it exits: a run is followed only if it
# still runs when the daemon takes its exec's event, and its file named
# only if mapped when the daemon takes the fault's.
printf '#include <fcntl.h>\n#include <stdio.h>\n#include <sys/mman.h>\n#include <unistd.h>\nint main(int c, char **v)\n{\n\tint fd = open(v[1], O_RDONLY);\n\tvolatile const char *p = mmap(0, 1 << 20, PROT_READ, MAP_SHARED, fd, 0);\n\tlong s = 0;\n\n\tif (fd < 0 || p == MAP_FAILED)\n\t\treturn 1;\n\tfor (long i = 0; i < (1 << 20); i += 16 << 12)\n\t\ts += p[i];\n\tprintf("%%ld\\n", s);\n\tsleep(1);\n\treturn 0;\n}\n' >mapper.c
gcc -O1 -no-pie -o mapper mapper.c && pbitmap add -q mapper && cp --preserve=xattr mapper mnt/mapper &&
	pbitmap verify -q mnt/mapper ||
	fail "cannot build, stamp and copy the mapping program (its marker too)"
head -c $((1 << 20)) /dev/urandom >mnt/nested/data && pbitmap add -q mnt/nested/data ||
	fail "cannot write and stamp the data file"
read -r mino dino <<<"$(stat -c %i mnt/mapper mnt/nested/data | tr '\n' ' ')"
[ "$mino" = "$dino" ] || fail "the case needs one inode number in both subvolumes: the mapper's $mino, the data file's $dino"

start_daemon owner.conf -v
[ "$(counter learning)" = 1 ] || fail "learning is not on ($(counter learning)): $(cat daemon.log)"
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; "$@"; }
cold mnt/mapper mnt/nested/data >/dev/null || fail "the mapper failed"	# its record read
settle execs 1
w0=$(counter learn_written)
cold mnt/mapper mnt/nested/data >/dev/null || fail "the mapper failed"
settle learners 1
settle learn_written $((w0 + 2))
stop_daemon
[ "$(counter learn_skip_changed)" = 0 ] || fail "learn_skip_changed $(counter learn_skip_changed): a file's identity was not the one that faulted"
[ "$(runs mnt/mapper)" = 1 ] && [ "$(runs mnt/nested/data)" = 1 ] ||
	fail "one learned run: the mapper has $(runs mnt/mapper) generations, the data file $(runs mnt/nested/data)"
[ "$(newest mnt/nested/data)" = 16 ] || fail "the data file's generation has $(newest mnt/nested/data) pages, wanted the 16 touched"
pbitmap verify -q mnt/mapper mnt/nested/data || fail "a learned record does not verify"
# unloaded here, not only at exit: the guest's later tests run without btrfs
umount mnt && losetup -d "$loop" && loop= || fail "cannot unmount and detach the btrfs image"
for ((i = ${#loaded[@]} - 1; i >= 0; i--)); do rmmod "${loaded[i]}" || fail "rmmod ${loaded[i]}"; done
loaded=()
! grep -qw btrfs /proc/filesystems || fail "btrfs is still loaded"
echo "learned on btrfs: the mapper on subvolume sv ($sdev, mounted from $mdev) and its data file" \
	"on a nested subvolume ($ndev), both inode $mino: one generation each, the data file's the 16 pages touched;" \
	"a daemon started before btrfs was loaded said, as it was mounted, that it cannot learn there"
