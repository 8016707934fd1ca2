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
