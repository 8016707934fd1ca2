# shellcheck shell=bash
# kernel-patch/tests/testbed-lib.sh: guest-side helpers for the features a
# distribution kernel has and the pbitmap tests must meet: memory cgroups,
# overlayfs, fs-verity, immutable files, read-only bind mounts, a second
# local filesystem (XFS).  Sourced by guest tests (kernel-patch/tests/t-*.sh),
# which run as root in the test-bed VM (kernel-patch/scripts/vm).
#
# Every helper fails the calling test with "FAIL: ..." when the feature is
# missing: a test that needs a feature never silently runs without it.
# Everything a helper creates is undone by tb_cleanup, which this file
# installs as the EXIT trap (call tb_cleanup yourself if you replace it).

# The undo list is a file, not a variable: helpers that print a path are
# called as $(helper), in a subshell, and what they defer must survive it.
TB_UNDO=$(mktemp /tmp/tb-undo.XXXXXX)

tb_fail() { echo "FAIL: $*"; exit 1; }

# tb_defer CMD: run CMD (a string, evaluated) at tb_cleanup, before the
# commands deferred earlier.
tb_defer() { printf '%s\n' "$1" >> "$TB_UNDO"; }

tb_cleanup() {
	local c
	[ -f "$TB_UNDO" ] || return 0
	local undo
	undo=$(tac "$TB_UNDO")
	while IFS= read -r c; do
		eval "$c" >/dev/null 2>&1 || true
	done <<<"$undo"
	rm -f "$TB_UNDO"
}
trap tb_cleanup EXIT

# tb_scratch: a fresh directory on the root filesystem (ext4 on the virtio
# disk, the disk the read counters measure; the image is a QEMU snapshot,
# so nothing written here outlives the boot).  Printed on stdout.
tb_scratch() {
	local d
	d=$(mktemp -d /var/tmp/tb.XXXXXX) || tb_fail "mktemp on the root filesystem"
	tb_defer "rm -rf '$d'"
	echo "$d"
}

# tb_in_memcg LIMIT CMD [ARG...]: run the program CMD in a new cgroup v2 memory cgroup
# whose memory.max is LIMIT (bytes, or with K/M/G as the kernel accepts).
# Exit status: CMD's.  TB_MEMCG names the group's directory meanwhile;
# after the run, TB_MEMCG_PEAK holds its memory.peak if the kernel has it
# (5.19 and later; else memory.current at the end), TB_MEMCG_OOM its oom_kill
# count from memory.events.
tb_in_memcg() {
	local limit=$1 cg rc=0
	shift
	[ -f /sys/fs/cgroup/cgroup.controllers ] ||
		tb_fail "no cgroup v2 hierarchy at /sys/fs/cgroup (CONFIG_CGROUPS, the runner mounts it)"
	grep -qw memory /sys/fs/cgroup/cgroup.controllers ||
		tb_fail "the cgroup v2 memory controller is missing (CONFIG_MEMCG)"
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
		echo +memory > /sys/fs/cgroup/cgroup.subtree_control ||
		tb_fail "cannot enable the memory controller for child groups"
	cg=$(mktemp -d /sys/fs/cgroup/tb.XXXXXX) || tb_fail "cannot create a cgroup"
	echo "$limit" > "$cg/memory.max" || tb_fail "cannot set memory.max=$limit"
	echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
	TB_MEMCG=$cg
	bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' tb-memcg "$cg" "$@" || rc=$?
	if [ -f "$cg/memory.peak" ]; then
		TB_MEMCG_PEAK=$(cat "$cg/memory.peak")
	else
		TB_MEMCG_PEAK=$(cat "$cg/memory.current")
	fi
	TB_MEMCG_OOM=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events")
	rmdir "$cg" 2>/dev/null || tb_defer "rmdir '$cg'"
	return $rc
}

# tb_overlay LOWER: mount an overlayfs whose lower layer is the directory
# LOWER and whose upper layer is a new directory on the root filesystem;
# print the mount point.  Unmounted by tb_cleanup.
tb_overlay() {
	local lower=$1 d
	[ -d "$lower" ] || tb_fail "tb_overlay: $lower is not a directory"
	grep -qw overlay /proc/filesystems || tb_fail "overlayfs missing (CONFIG_OVERLAY_FS)"
	d=$(tb_scratch)
	mkdir -p "$d/upper" "$d/work" "$d/merged"
	mount -t overlay overlay -o "lowerdir=$lower,upperdir=$d/upper,workdir=$d/work" \
		"$d/merged" || tb_fail "cannot mount overlayfs over $lower"
	tb_defer "umount '$d/merged'"
	echo "$d/merged"
}

# tb_verity FILE: enable fs-verity on FILE (on the root ext4, made with
# -O verity by make-image).  FILE is read-only from then on.
tb_verity() {
	command -v fsverity >/dev/null || tb_fail "fsverity missing in the guest (make image)"
	fsverity enable "$1" || tb_fail "fsverity enable $1 failed (CONFIG_FS_VERITY, ext4 -O verity)"
	fsverity measure "$1" >/dev/null || tb_fail "fsverity measure $1 failed"
}

# tb_immutable FILE: set the immutable attribute; cleared by tb_cleanup
# (an immutable file could not be removed otherwise).
tb_immutable() {
	chattr +i "$1" || tb_fail "chattr +i $1 failed"
	tb_defer "chattr -i '$1'"
}

# tb_ro_bind SRC: bind-mount the file or directory SRC read-only at a new
# place and print it.  Unmounted by tb_cleanup.
tb_ro_bind() {
	local src=$1 d dst
	d=$(tb_scratch)
	dst=$d/ro
	if [ -d "$src" ]; then mkdir "$dst"; else : > "$dst"; fi
	mount --bind "$src" "$dst" || tb_fail "cannot bind-mount $src"
	tb_defer "umount '$dst'"
	mount -o remount,bind,ro "$dst" || tb_fail "cannot make the bind mount of $src read-only"
	echo "$dst"
}

# tb_xfs [SIZE]: make and mount a fresh XFS filesystem (default 512M) on a
# loop device over a sparse file on the root filesystem; print the mount
# point.  XFS is the second local filesystem: it caches files in large
# folios, which ext4 in 6.12 does not.
tb_xfs() {
	local size=${1:-512M} d
	grep -qw xfs /proc/filesystems || tb_fail "XFS missing (CONFIG_XFS_FS)"
	command -v mkfs.xfs >/dev/null || tb_fail "mkfs.xfs missing in the guest (make image)"
	d=$(tb_scratch)
	truncate -s "$size" "$d/xfs.img"
	mkfs.xfs -q "$d/xfs.img" || tb_fail "mkfs.xfs failed"
	mkdir "$d/mnt"
	mount -o loop "$d/xfs.img" "$d/mnt" || tb_fail "cannot mount the XFS image"
	tb_defer "umount '$d/mnt'"
	echo "$d/mnt"
}

# tb_wait PID...: wait for each PID (children of the calling shell) and
# return 1, naming each failure, unless every one exited 0.  A plain
# `wait P1 P2` returns only the last one's status.
tb_wait() {
	local p rc bad=0
	for p in "$@"; do
		rc=0
		wait "$p" || rc=$?
		[ $rc = 0 ] || { echo "process $p exited with status $rc"; bad=1; }
	done
	return $bad
}
