# shellcheck shell=bash
# kernel-patch/tests/metalib.sh: where ext4 keeps what a path look-up
# reads, for the tests that read metadata blocks ahead (t-plan-meta's
# kernel table, t-daemon-kernel-meta's pbitmapd list).  Sourced.
#
# dir_blocks DIR...: each directory's blocks as FIEMAP gives them (the
# kernel maps a directory's blocks the same way), in 4 KiB units of the
# device, one a line.
dir_blocks() {
	local d
	for d; do
		filefrag -b4096 -e "$d" | awk -F'[ .:]+' '$2 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/ {
			for (i = 0; i <= $4 - $3; i++) print $5 + i }'
	done
}

# inode_blocks DEVICE PATH...: the inode-table block of each PATH's inode
# (debugfs imap on DEVICE, read-only), one a line.
inode_blocks() {
	local dev=$1 f cmd
	shift
	cmd=$(mktemp)
	for f; do echo "imap <$(stat -c %i "$f")>"; done >"$cmd"
	debugfs -c -f "$cmd" "$dev" 2>/dev/null | awk '/located at block/ { sub(",", "", $4); print $4 }'
	rm -f "$cmd"
}

# meta_ranges FILE: FILE's units (sorted, each once, one a line) as the
# START:NR ranges craft-meta.py takes, one a line.
meta_ranges() {
	awk 'NR > 1 && $1 != prev + 1 { print start ":" prev - start + 1; start = $1 }
		NR == 1 { start = $1 } { prev = $1 } END { print start ":" prev - start + 1 }' "$1"
}

# meta_table_setup DIR: the kernel metadata-table tests' ground, DIR's
# filesystem: ext4 with 4 KiB blocks (a table counts 4 KiB units), its
# disk's read requests readable.  Sets SRC (the filesystem's device), DISK
# and ROT (its rotational flag, set to 1: vm.pbitmap_plan_meta -1 reads a
# table on a rotational disk only), turns pbitmap on, and restores both
# and vm.pbitmap_plan_meta at exit (meta_table_restore(), the EXIT
# trap).  Needs the caller's fail().
meta_table_setup() {
	local w=$1
	SRC=$(findmnt -no SOURCE --target "$w")
	[ "$(findmnt -no FSTYPE --target "$w")" = ext4 ] || fail "$w is not on ext4: the table is made for ext4"
	[ "$(stat -f -c %S "$w")" = 4096 ] ||
		fail "$w's filesystem has $(stat -f -c %S "$w")-byte blocks: a table counts 4 KiB units"
	DISK=$(lsblk -no PKNAME "$SRC" 2>/dev/null || true)
	[ -n "$DISK" ] || DISK=$(basename "$SRC")
	ROT=/sys/block/$DISK/queue/rotational
	[ -r "/sys/block/$DISK/stat" ] && [ -w "$ROT" ] || fail "no /sys/block/$DISK/stat or $ROT"
	saved="$(cat /proc/sys/vm/pbitmap_enabled) $(cat /proc/sys/vm/pbitmap_plan_meta) $(cat "$ROT")"
	trap meta_table_restore EXIT
	echo 1 >/proc/sys/vm/pbitmap_enabled
	echo 1 >"$ROT"
}

# meta_table_restore: what meta_table_setup changed, as it found it.
meta_table_restore() {
	local e m r
	read -r e m r <<<"$saved"
	echo "$e" >/proc/sys/vm/pbitmap_enabled
	echo "$m" >/proc/sys/vm/pbitmap_plan_meta
	echo "$r" >"$ROT"
}

# meta_cold_exec CMD...: CMD run cold, after a drop of the caches (it
# says itself what failed).  Sets D, the change of the counters KEYS over
# it (vmstatlib.sh), and REQS, $DISK's read requests meanwhile.
meta_cold_exec() {
	local r0 r1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	read -r r0 _ <"/sys/block/$DISK/stat"
	vmstat_snap S0 "${KEYS[@]}"
	"$@"
	vmstat_snap S1 "${KEYS[@]}"
	read -r r1 _ <"/sys/block/$DISK/stat"
	vmstat_diff D S0 S1
	REQS=$((r1 - r0))
}

# meta_rounds PROG: three rounds, each a cold exec of PROG with
# vm.pbitmap_plan_meta=1, then one with 0, by the caller's cold_exec
# (which sets D, the counters' change, and REQS, the read requests).  Each
# exec must follow the plan; with 1 it must read pages of the table, with
# 0 none.  On a failure, the caller's meta_detail, if defined, adds to the
# message.  Sets WITH and WITHOUT: the read requests of each three.
meta_rounds() {
	local prog=$1 round detail
	WITH=0 WITHOUT=0
	for round in 1 2 3; do
		echo 1 >/proc/sys/vm/pbitmap_plan_meta
		cold_exec "$prog"
		if [ "${D[pbitmap_plan_exec]}" != 1 ] || [ "${D[pbitmap_plan_meta_pages]}" -le 0 ]; then
			detail=$(declare -F meta_detail >/dev/null && meta_detail)
			fail "vm.pbitmap_plan_meta=1: plan_exec ${D[pbitmap_plan_exec]}, meta_pages ${D[pbitmap_plan_meta_pages]}; want 1 and some${detail:+ ($detail)}"
		fi
		WITH=$((WITH + REQS))
		echo 0 >/proc/sys/vm/pbitmap_plan_meta
		cold_exec "$prog"
		[ "${D[pbitmap_plan_exec]} ${D[pbitmap_plan_meta_pages]}" = "1 0" ] ||
			fail "vm.pbitmap_plan_meta=0: plan_exec ${D[pbitmap_plan_exec]}, meta_pages ${D[pbitmap_plan_meta_pages]}; want 1 0"
		WITHOUT=$((WITHOUT + REQS))
		echo "round $round: $WITH read requests with the table so far, $WITHOUT without"
	done
}
