#!/bin/bash
# t-device-gap: the join gap `pbitmap device-gap --set` records for
# pbitmapd, on this host's stock kernel (the guest tests t-device-gap and
# t-device-gap-set measure real disks and the patched kernel's sysctl).
#
#   - pbitmapd --print-config (ASan build), PBITMAP_RUNDIR pointing at a
#     directory of the test's: no file, a malformed one (each kind below,
#     a gap wider than device-gap writes too), one for another device than
#     /usr's and one saying -1 leave PBITMAP_DAEMON_JOIN_GAP_KB at its
#     default, reported "(default)", a malformed one with a warning naming
#     the file; a valid one for /usr's device, narrower or wider than the
#     default, replaces it, "(measured at boot)";
#     PBITMAP_DAEMON_JOIN_GAP_KB in the settings wins over it, "(setting)";
#     the other settings print with "(default)" or "(setting)".
#   - pbitmap device-gap --set on a loop device (a file of the test's, with
#     direct I/O): the directory is created 0755 and the file 0644 under a
#     umask of 077, the file is one line "KIB MAJ:MIN" with the value -q
#     prints and the loop device's numbers, no temporary file is left; on
#     this kernel (no vm.pbitmap_merge_gap_kb) it says so in a note and
#     exits 0.  pbitmapd then keeps its default: the file names the loop
#     device, not /usr's.
#   - The device a filesystem reads from (blockdev.c, shared by the tool
#     and pbitmapd): a btrfs on one loop device, whose files have an
#     anonymous st_dev (0:N): device-gap --set on a directory of it
#     measures and records the loop device's MAJ:MIN; pbitmapd (the static
#     build: it needs nothing from /usr) with that btrfs bind-mounted on
#     /usr in a mount namespace of its own takes a gap recorded for the
#     loop device, "(measured at boot)", and not one for the anonymous
#     device.  A btrfs on two loop devices and a tmpfs: --set exits 0 with
#     the note "on no single block device (REASON): nothing measured ...",
#     measures nothing, leaves an earlier file as it was and creates none;
#     without --set, exit 1 and "pbitmap: PATH: on no single block device
#     (REASON)"; pbitmapd with the two-device btrfs on /usr keeps its
#     default with a note.  A kernel without btrfs fails the test.
#   - Errors: the directory a regular file, the file's name a non-empty
#     directory: exit 1, "pbitmap: DIR/device-gap: ..." on stderr, nothing
#     left behind.

source "$(dirname "$0")/../lib.sh"
need losetup truncate stat findmnt mkfs.btrfs btrfs mount umount unshare
PBITMAPD=${PBITMAPD:-$TOP/build/asan/pbitmapd}
[[ -x $PBITMAPD ]] || fail "no $PBITMAPD (make build/asan/pbitmapd)"
# With /usr bind-mounted over in a mount namespace, only a static build runs.
PBITMAPD_STATIC=${PBITMAPD_STATIC:-$TOP/build/pbitmapd}
[[ -x $PBITMAPD_STATIC ]] || fail "no $PBITMAPD_STATIC (make build/pbitmapd)"
[[ $(id -u) == 0 ]] || fail "must run as root: a loop device, and reading it"
[[ ! -e /proc/sys/vm/pbitmap_merge_gap_kb ]] ||
	fail "this kernel ($(uname -r)) has the pbitmap series: the test wants a stock kernel"

d=$(tmpdir)
cd "$d" || fail "cd $d"
export PBITMAP_RUNDIR=$d/run
R=$PBITMAP_RUNDIR

# The default: 256 KiB (daemon/config.c).
dflt=256
# /usr's device as pbitmapd finds it: st_dev, or a btrfs's one device.
usr_dev=$(stat -c '%Hd:%Ld' /usr) || fail "stat /usr"
if [[ $(stat -f -c %T /usr) == btrfs ]]; then
	fsid=$(btrfs filesystem show /usr | awk '/uuid:/ { print $NF; exit }') || fail "btrfs filesystem show /usr"
	usr_devs=(/sys/fs/btrfs/"$fsid"/devices/*/dev)
	((${#usr_devs[@]} == 1)) && [[ -e ${usr_devs[0]} ]] ||
		fail "/usr is on a btrfs of ${#usr_devs[@]} devices: pbitmapd uses no measured gap there; the test wants /usr on one"
	usr_dev=$(cat "${usr_devs[0]}") || fail "cat ${usr_devs[0]}"
fi
[[ $usr_dev =~ ^[0-9]+:[0-9]+$ ]] || fail "stat /usr: '$usr_dev'"
[[ $usr_dev != 0:* ]] || fail "/usr is on no block device ($usr_dev): pbitmapd uses no measured gap there; the test wants /usr on one"
# Another device than /usr's: the same major, another minor.
other_dev=${usr_dev%:*}:$((${usr_dev#*:} + 1))

: >empty.conf
gap_line() {	# CONF: pbitmapd's gap line, its warnings in $ERR
	expect_status 0 "$PBITMAPD" --print-config -c "$1"
	grep '^PBITMAP_DAEMON_JOIN_GAP_KB ' "$OUT" || fail "--print-config printed no gap: $(cat "$OUT")"
}
expect_gap() {	# CONTENT-OR-"absent" LINE [WARNING]
	rm -rf "$R" && mkdir "$R" || fail "mkdir $R"
	[[ $1 == absent ]] || printf '%b' "$1" >"$R/device-gap"
	got=$(gap_line empty.conf)
	[[ $got == "$2" ]] || fail "device-gap file '$1': got '$got', not '$2'"
	if (($# > 2)); then
		grep -qF "pbitmapd: $R/device-gap: $3" "$ERR" || fail "device-gap file '$1': no warning '$3': $(cat "$ERR")"
	elif [[ -s $ERR ]] && ! grep -q "not /usr's" "$ERR"; then
		fail "device-gap file '$1': unexpected message: $(cat "$ERR")"
	fi
}

# ---- pbitmapd's gap ----------------------------------------------------------

malformed="malformed (not one line 'KIB MAJ:MIN'); using the default join gap"
expect_gap absent "PBITMAP_DAEMON_JOIN_GAP_KB $dflt (default)"
for bad in '' '\n' '32\n' "32 $usr_dev" "32  $usr_dev\n" "32 $usr_dev\n\n" "32 $usr_dev x\n" \
	   "-2 $usr_dev\n" "+32 $usr_dev\n" "0x20 $usr_dev\n" "1025 $usr_dev\n" "65537 $usr_dev\n" "32 ${usr_dev%:*}\n" \
	   "32 ${usr_dev%:*}:\n" "32 :${usr_dev#*:}\n" "32 $usr_dev\n33 $usr_dev\n" "junk\n"; do
	expect_gap "$bad" "PBITMAP_DAEMON_JOIN_GAP_KB $dflt (default)" "$malformed"
done
expect_gap "32 $other_dev\n" "PBITMAP_DAEMON_JOIN_GAP_KB $dflt (default)"
grep -qF "measured on device $other_dev, not /usr's ($usr_dev): the default join gap" "$ERR" ||
	fail "another device: $(cat "$ERR")"
expect_gap "-1 $usr_dev\n" "PBITMAP_DAEMON_JOIN_GAP_KB $dflt (default)"
expect_gap "$((dflt + 4)) $usr_dev\n" "PBITMAP_DAEMON_JOIN_GAP_KB $((dflt + 4)) (measured at boot)"
expect_gap "1024 $usr_dev\n" "PBITMAP_DAEMON_JOIN_GAP_KB 1024 (measured at boot)"
expect_gap "$dflt $usr_dev\n" "PBITMAP_DAEMON_JOIN_GAP_KB $dflt (measured at boot)"
expect_gap "44 $usr_dev\n" "PBITMAP_DAEMON_JOIN_GAP_KB 44 (measured at boot)"
expect_gap "0 $usr_dev\n" "PBITMAP_DAEMON_JOIN_GAP_KB 0 (measured at boot)"
# An explicit setting wins, wider or narrower.
printf '44 %s\n' "$usr_dev" >"$R/device-gap"
for v in 128 8; do
	printf 'PBITMAP_DAEMON_JOIN_GAP_KB=%s\nPBITMAP_DAEMON_MAX_PARALLEL=2\n' "$v" >set.conf
	got=$(gap_line set.conf)
	[[ $got == "PBITMAP_DAEMON_JOIN_GAP_KB $v (setting)" ]] || fail "setting $v: got '$got'"
done
grep -qx "PBITMAP_DAEMON_MAX_PARALLEL 2 (setting)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_BUDGET_MB 256 (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON no (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
# one line per setting pbitmapd.8 documents (".BI NAME= N" and the like), none left out
n=$(grep -o '^\.B[IR] PBITMAP_DAEMON[A-Z_]*= ' "$TOP/pbitmap-tool/daemon/pbitmapd.8" | sort -u | wc -l)
((n >= 12)) || fail "pbitmapd.8 lists $n settings"
[[ $(wc -l <"$OUT") == "$n" ]] || fail "--print-config: not the $n settings of pbitmapd.8: $(cat "$OUT")"
expect_status 2 "$PBITMAPD" --print-config --check-enabled -c set.conf
printf 'PBITMAP_DAEMON_JOIN_GAP_KB=x\n' >bad.conf
expect_status 1 "$PBITMAPD" --print-config -c bad.conf
grep -q "bad.conf: line 1: PBITMAP_DAEMON_JOIN_GAP_KB: 'x' is not a number" "$ERR" || fail "bad.conf: $(cat "$ERR")"
pass "pbitmapd: absent, malformed, another device's and -1 files leave the default ($dflt KiB); /usr's narrower or wider one replaces it; a setting wins"

# ---- device-gap --set ----------------------------------------------------------

truncate -s 64M disk.img || fail "truncate"
dev=$(losetup -f --show --direct-io=on disk.img) || fail "losetup disk.img"
at_exit "losetup -d $dev"
loop_dev=$(stat -c '%Hr:%Lr' "$dev") || fail "stat $dev"

rm -rf "$R"
v=$(umask 077 && "$PBITMAP" device-gap -q --set "$dev" 2>"$ERR") || fail "device-gap -q --set $dev: $(cat "$ERR")"
[[ ! -s $ERR ]] || fail "device-gap -q --set printed on stderr: $(cat "$ERR")"
[[ $v =~ ^(-1|[0-9]+)$ ]] || fail "device-gap -q printed '$v'"
[[ $(stat -c %a "$R") == 755 ]] || fail "$R created with mode $(stat -c %a "$R"), not 755"
[[ $(stat -c %a "$R/device-gap") == 644 ]] || fail "$R/device-gap has mode $(stat -c %a "$R/device-gap"), not 644"
[[ $(cat "$R/device-gap") == "$v $loop_dev" ]] || fail "$R/device-gap: '$(cat "$R/device-gap")', not '$v $loop_dev'"
[[ $(wc -c <"$R/device-gap") == $((${#v} + ${#loop_dev} + 2)) ]] || fail "$R/device-gap is not one line"
[[ $(ls -A "$R") == device-gap ]] || fail "left in $R: $(ls -A "$R")"
expect_status 0 "$PBITMAP" device-gap --set "$dev"
grep -q "^$dev: $dev ($loop_dev)" "$OUT" || fail "device-gap --set: $(cat "$OUT")"
grep -qx "pbitmap: /proc/sys/vm/pbitmap_merge_gap_kb: no such setting: the kernel has no pbitmap patch; the gap is recorded for pbitmapd only" "$ERR" ||
	fail "device-gap --set on a stock kernel: $(cat "$ERR")"
grep -Eqx "(-1|[0-9]+) $loop_dev" "$R/device-gap" || fail "$R/device-gap: '$(cat "$R/device-gap")'"
[[ $(ls -A "$R") == device-gap ]] || fail "left in $R: $(ls -A "$R")"
got=$(gap_line empty.conf)
[[ $got == "PBITMAP_DAEMON_JOIN_GAP_KB $dflt (default)" ]] || fail "a file for $dev: got '$got'"
grep -qF "measured on device $loop_dev, not /usr's" "$ERR" || fail "a file for $dev: $(cat "$ERR")"
pass "device-gap --set $dev: '$(cat "$R/device-gap")' in $R/device-gap (0644, in a 0755 directory), a note, exit 0; pbitmapd keeps its default"

# ---- errors writing the file ------------------------------------------------------

export PBITMAP_RUNDIR=$d/file
: >"$d/file"
expect_status 1 "$PBITMAP" device-gap --set "$dev"
grep -q "^pbitmap: $d/file/device-gap: cannot write: Not a directory" "$ERR" ||
	fail "the directory a file: $(cat "$ERR")"
[[ ! -s $d/file ]] || fail "$d/file written to"
export PBITMAP_RUNDIR=$d/run2
mkdir -p "$d/run2/device-gap/x" || fail "mkdir"
expect_status 1 "$PBITMAP" device-gap --set "$dev"
grep -q "^pbitmap: $d/run2/device-gap: cannot write: Is a directory" "$ERR" ||
	fail "the file a directory: $(cat "$ERR")"
[[ $(ls -A "$d/run2") == device-gap && -d $d/run2/device-gap/x ]] || fail "left in $d/run2: $(ls -A "$d/run2")"
pass "errors: the directory a file, the file's name a directory: exit 1, the file named, nothing left"

# ---- the device a filesystem reads from: btrfs, tmpfs --------------------------------

grep -qw btrfs /proc/filesystems || modprobe btrfs >/dev/null 2>&1
grep -qw btrfs /proc/filesystems ||
	fail "this kernel ($(uname -r)) has no btrfs (not in /proc/filesystems, modprobe btrfs failed): the test needs it"
export PBITMAP_RUNDIR=$d/run
R=$PBITMAP_RUNDIR
NOTE_TAIL="nothing measured, the join gap stays the kernel's model"

# A loop device of a new 256 MiB file (direct I/O: device-gap reads it).
new_loop() {	# NAME: the device in $loop
	truncate -s 256M "$d/$1.img" || fail "truncate $1.img"
	loop=$(losetup -f --show --direct-io=on "$d/$1.img") || fail "losetup $1.img"
	at_exit "losetup -d $loop"
}
# pbitmapd's gap line with DIR on /usr (a mount namespace of the test's).
gap_with_usr() {	# DIR: the line, pbitmapd's messages in $ERR
	expect_status 0 unshare -m --propagation private \
		bash -c 'mount --bind "$1" /usr && exec "$2" --print-config -c "$3"' _ \
		"$1" "$PBITMAPD_STATIC" "$d/empty.conf"
	grep '^PBITMAP_DAEMON_JOIN_GAP_KB ' "$OUT" || fail "--print-config printed no gap: $(cat "$OUT")"
}

# One device: what device-gap measures, and pbitmapd compares, is the loop device.
new_loop bt1
b1=$loop
b1_dev=$(stat -c '%Hr:%Lr' "$b1") || fail "stat $b1"
mkfs.btrfs -q -f "$b1" >mkfs.out 2>&1 || fail "mkfs.btrfs $b1: $(cat mkfs.out)"
mkdir bt1 && mount -t btrfs "$b1" bt1 || fail "mount -t btrfs $b1"
at_exit "umount $d/bt1"
mkdir bt1/dir || fail "mkdir bt1/dir"
anon=$(stat -c '%Hd:%Ld' bt1/dir) || fail "stat bt1/dir"
[[ $anon == 0:* ]] || fail "bt1/dir has st_dev $anon, not btrfs's anonymous 0:N: the test proves nothing"
rm -rf "$R"
expect_status 0 "$PBITMAP" device-gap --set bt1/dir
grep -q "^bt1/dir: $b1 ($b1_dev), 8 reads at once$" "$OUT" || fail "device-gap --set bt1/dir: $(cat "$OUT")"
grep -qx "pbitmap: /proc/sys/vm/pbitmap_merge_gap_kb: no such setting: the kernel has no pbitmap patch; the gap is recorded for pbitmapd only" "$ERR" ||
	fail "device-gap --set bt1/dir: $(cat "$ERR")"
grep -Eqx "(-1|[0-9]+) $b1_dev" "$R/device-gap" || fail "$R/device-gap: '$(cat "$R/device-gap")', not the loop device's $b1_dev"
printf '44 %s\n' "$b1_dev" >"$R/device-gap"
got=$(gap_with_usr "$d/bt1/dir")
[[ $got == "PBITMAP_DAEMON_JOIN_GAP_KB 44 (measured at boot)" ]] || fail "btrfs /usr, a file for $b1_dev: got '$got' ($(cat "$ERR"))"
[[ ! -s $ERR ]] || fail "btrfs /usr, a file for $b1_dev: unexpected message: $(cat "$ERR")"
printf '44 %s\n' "$anon" >"$R/device-gap"
got=$(gap_with_usr "$d/bt1/dir")
[[ $got == "PBITMAP_DAEMON_JOIN_GAP_KB $dflt (default)" ]] || fail "btrfs /usr, a file for $anon: got '$got'"
grep -qF "measured on device $anon, not /usr's ($b1_dev): the default join gap" "$ERR" || fail "btrfs /usr, a file for $anon: $(cat "$ERR")"
pass "btrfs on $b1 (st_dev $anon): device-gap --set records $b1_dev; pbitmapd with it on /usr takes a gap for $b1_dev, not one for $anon"

# An earlier file, left as it is by --set on no single device.
earlier() {
	rm -rf "$R" && mkdir "$R" || fail "mkdir $R"
	printf '44 %s\n' "$b1_dev" >"$R/device-gap"
	snapshot "$R/device-gap"
}
no_device() {	# PATH REASON: --set notes and exits 0, without --set exit 1
	earlier
	expect_status 0 "$PBITMAP" device-gap --set "$1"
	[[ ! -s $OUT ]] || fail "device-gap --set $1 printed: $(cat "$OUT")"
	[[ $(cat "$ERR") == "pbitmap: $1: on no single block device ($2): $NOTE_TAIL" ]] ||
		fail "device-gap --set $1: $(cat "$ERR")"
	assert_unchanged "$R/device-gap" "device-gap --set $1"
	[[ $(ls -A "$R") == device-gap ]] || fail "left in $R: $(ls -A "$R")"
	rm -rf "$R"
	expect_status 0 "$PBITMAP" device-gap -q --set "$1"
	[[ ! -s $OUT && ! -s $ERR ]] || fail "device-gap -q --set $1 printed: $(cat "$OUT" "$ERR")"
	[[ ! -e $R ]] || fail "device-gap --set $1 created $R: $(ls -A "$R")"
	expect_status 1 "$PBITMAP" device-gap "$1"
	[[ $(cat "$ERR") == "pbitmap: $1: on no single block device ($2)" ]] || fail "device-gap $1: $(cat "$ERR")"
	[[ ! -s $OUT ]] || fail "device-gap $1 printed: $(cat "$OUT")"
}

# Two devices: none of them is the filesystem's.
new_loop bt2a
b2=$loop
b2_dev=$(stat -c '%Hr:%Lr' "$b2") || fail "stat $b2"
new_loop bt2b
b3=$loop
mkfs.btrfs -q -f -d single -m raid1 "$b2" "$b3" >mkfs.out 2>&1 || fail "mkfs.btrfs $b2 $b3: $(cat mkfs.out)"
mkdir bt2 && mount -t btrfs -o "device=$b2,device=$b3" "$b2" bt2 || fail "mount -t btrfs $b2 ($b3)"
at_exit "umount $d/bt2"
no_device bt2 "btrfs on 2 devices"
mkdir -p "$R" && printf '44 %s\n' "$b2_dev" >"$R/device-gap" || fail "writing $R/device-gap"
got=$(gap_with_usr "$d/bt2")
[[ $got == "PBITMAP_DAEMON_JOIN_GAP_KB $dflt (default)" ]] || fail "two-device btrfs /usr: got '$got'"
grep -qF "measured on device $b2_dev, but /usr is on no single block device (btrfs on 2 devices): the default join gap" "$ERR" ||
	fail "two-device btrfs /usr: $(cat "$ERR")"
pass "btrfs on $b2 and $b3: device-gap --set notes it, exit 0, the file left; without --set exit 1; pbitmapd keeps its default"

# No device at all.
mkdir tm && mount -t tmpfs -o size=1m tmpfs tm || fail "mount tmpfs"
at_exit "umount $d/tm"
no_device tm "not a block filesystem: tmpfs"
pass "tmpfs: device-gap --set notes it, exit 0, the file left and none created; without --set exit 1"
