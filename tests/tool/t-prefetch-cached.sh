#!/bin/bash
# t-prefetch-cached: `pbitmap prefetch` and pbitmapd read no gap to join
# pages that are cached already (a marked range whose pages are all cached
# is left out before ranges are joined), as the kernel's patch 0027 does
# not either; and the limit the kernel puts on it in user space.
#
# A data file of 8 MiB on a loop-mounted ext4, stamped with 4 KiB granules
# marking pages 256-271 and 280-295 (1 MiB in: not what the tool's own
# read of the file's head brings in): the 32 KiB gap between the runs is
# under `prefetch`'s join gap (64 KiB), so read cold the two go out as one
# extent of 40 pages.  Evicted (POSIX_FADV_DONTNEED) before each case,
# pages put in the cache with pread() under POSIX_FADV_RANDOM (no
# readahead), resident pages from 128 on read with mincore() as root (the
# tool reads the file's head itself).
# `pbitmap prefetch -v`'s report is asserted exactly, and that no page
# outside those named is resident after it (readahead may drop pages it
# cannot allocate on a busy host, never read more):
#   cold   nothing cached: one extent, 163840 bytes; pages 256-295
#   both   both runs cached: nothing asked for (0 extents); the gap, 272-279,
#          still not resident
#   first  the first run cached: the second run alone, 65536 bytes; the
#          gap not resident
#   part   half of the first run cached (256-263): a range partly cached is
#          read whole, one extent of 163840 bytes
#   nobody the first run cached, `prefetch` run as user nobody, who may read
#          the file but neither owns it nor may write it: recent kernels
#          (Debian's 6.12, this host's) answer cachestat(2) to the owner, a
#          writer and CAP_FOWNER only, as mincore(2), and then the whole
#          joined extent is read, 163840 bytes; a kernel that answers nobody
#          (the test asks it first, and says which) gives 65536
#   owner  the same with the file given to nobody: 65536 bytes
# pbitmapd (the ASan build, its defaults but the join gap, 64 KiB, and
# learning off), a copy of sleep on the same ext4 planned with the data
# file (one step per run; the plan's reads are trimmed the same way before
# they are joined; the file then unstamped, so that no open of it starts a
# read of its own), each exec 2 s after the last (the daemon reads a
# program once in 2 s), its log line asserted exactly, and the pages
# resident afterwards as above:
#   cold, first, both  as root: 1 extent of 163840 bytes, 1 of 65536, none
#   whole              the whole file cached (the plan's file asked about
#          once, all of it cached: no question per step): none
#   (the daemon's counter cached_bytes, the marked bytes it left out as
#   cached: +0, +65536, +131072, +131072)
#   nobody-exec        both runs cached, exec'd by nobody (the daemon's
#          reader takes the exec'ing user, without capabilities): where the
#          kernel refuses nobody cachestat, the 163840 bytes are read
#          (elsewhere none)
# The tool asks the page cache with cachestat(2), Linux 6.5: on an older
# kernel the test fails and says so.
source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need python3 mkfs.ext4 mount umount truncate setpriv timeout
[[ $(id -u) == 0 ]] || fail "must run as root: a loop mount, and pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
mkdir "$d/ext4"
truncate -s 64M "$d/ext4.img"
mkfs.ext4 -q -F "$d/ext4.img" || fail "mkfs.ext4"
mount -o loop "$d/ext4.img" "$d/ext4" && at_exit "umount $d/ext4" || fail "cannot loop-mount ext4"
[ "$(getconf PAGESIZE)" = 4096 ] || fail "the test's page numbers assume 4 KiB pages"

pages() { python3 "$TOP/tests/lib/pagecache.py" "$@"; }

f=$d/ext4/data
head -c 8M /dev/urandom >"$f" || fail "cannot write the data file"
"$PBITMAP" add -q --page-shift 12 "$f" || fail "pbitmap add failed"
"$PBITMAP" set --pages 256-271,280-295 "$f" || fail "pbitmap set failed"

python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY)
buf = (ctypes.c_uint64 * 5)()
rng = (ctypes.c_uint64 * 2)(0, 0)
sys.exit(0 if libc.syscall(451, fd, rng, buf, 0) == 0 else 1)' "$f" ||
	fail "cachestat(2) failed on $(uname -r): the tool needs Linux 6.5 for this"
chmod 755 "$d" "$d/ext4" "$(dirname "$d")"
chmod 644 "$f"
# Whether this kernel answers cachestat(2) to nobody, who may read $f only
# (/usr/bin/python3: a user's own python may not be nobody's to run)
if setpriv --reuid=65534 --regid=65534 --clear-groups -- /usr/bin/python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY)
buf = (ctypes.c_uint64 * 5)()
rng = (ctypes.c_uint64 * 2)(0, 0)
r = libc.syscall(451, fd, rng, buf, 0)
sys.exit(0 if r == 0 else 3 if ctypes.get_errno() == 1 else 1)' "$f"; then
	nobody_first="1 extents, 65536 bytes" nobody_first_pages=256-271,280-295
	nobody_both="0 extents, 0 bytes" nobody_both_pages=256-271,280-295 nobody_both_left=131072
	echo "# $(uname -r) answers cachestat(2) to a reader who neither owns nor may write the file"
elif (($? == 3)); then
	nobody_first="1 extents, 163840 bytes" nobody_first_pages=256-295
	nobody_both="1 extents, 163840 bytes" nobody_both_pages=256-295 nobody_both_left=0
	echo "# $(uname -r) refuses cachestat(2) (EPERM) to a reader who neither owns nor may write the file"
else
	fail "cachestat(2) by nobody failed otherwise than with EPERM"
fi

# cache_only RANGES: the file evicted (again while a read in flight keeps
# pages locked), then RANGES (first-last) read into the cache
cache_only() {
	local left
	for _ in $(seq 20); do
		pages evict "$f"
		left=$(pages runs "$f")
		[ "$left" = none ] && break
		sleep 0.1
	done
	[ "$left" = none ] || fail "the file not evicted: pages $left still cached"
	[ -z "$1" ] || pages cache "$f" $1
}

# resident_within NAME WANT: after WILLNEED's reads, no page from 128 on
# resident outside WANT (readahead may drop pages it cannot allocate on a
# busy host, never read more); prints them
resident_within() {
	local resident
	sleep 0.5	# WILLNEED does not wait for its reads
	resident=$(pages runs "$f" 128)	# the tool reads the head itself
	echo "$1: resident after: $resident"
	python3 - "$resident" "$2" <<'PY' || fail "$1: resident after the reads: $resident, more than $2"
import sys
def pages(spec):
    out = set()
    for r in ([] if spec == "none" else spec.split(",")):
        a, _, b = r.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
sys.exit(0 if pages(sys.argv[1]) <= pages(sys.argv[2]) else 1)
PY
}

# case NAME CACHED-RANGES WANT-OUTPUT WANT-RESIDENT [USER]
case_run() {
	local out as=()
	cache_only "$2"
	[ -z "${5:-}" ] || as=(setpriv --reuid="$5" --regid="$5" --clear-groups --)
	out=$("${as[@]}" "$PBITMAP" prefetch -v "$f" 2>&1) || fail "$1: prefetch failed: $out"
	echo "$1: cached before ${2:-nothing}; $out"
	[ "$out" = "$f: $3" ] || fail "$1: prefetch said '$out', not '$f: $3'"
	resident_within "$1" "$4"
}
case_run cold "" "1 extents, 163840 bytes" 256-295
case_run both "256-271 280-295" "0 extents, 0 bytes" 256-271,280-295
case_run first "256-271" "1 extents, 65536 bytes" 256-271,280-295
case_run part "256-263" "1 extents, 163840 bytes" 256-295
case_run nobody "256-271" "$nobody_first" "$nobody_first_pages" 65534
chown 65534 "$f" || fail "chown"
case_run owner "256-271" "1 extents, 65536 bytes" 256-271,280-295 65534
chown 0 "$f" || fail "chown"
pass "prefetch reads the joined 40 pages cold, nothing with both runs cached, the second run alone" \
	"with the first cached, all 40 with half of the first; for nobody: $nobody_first"

# pbitmapd: a plan's reads, for root's exec and for nobody's
p=$d/ext4/prog
cp /bin/sleep "$p" && chmod 755 "$p" && "$PBITMAP" add -q --plan-size 4K "$p" &&
	"$PBITMAP" plan "$p" "$f" || fail "cannot plan $p"
# Unstamped once planned (the plan keeps its steps): the test's own opens of
# the file must not start the daemon's read of a stamped data file's pages
"$PBITMAP" strip -q "$f" || fail "cannot strip $f"
cd "$d" || fail "cd $d"
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_JOIN_GAP_KB=64\n' >on.conf
daemon_start on.conf
# exec_case NAME CACHED-RANGES WANT WANT-RESIDENT [USER]: prog exec'd (5 s:
# the daemon reads the plan while it runs), its log line "plan, 1 files, WANT"
exec_case() {
	local as=() pid line
	sleep 2.1	# the daemon reads a program once in 2 s (skip_recent)
	cache_only "$2"
	[ -z "${5:-}" ] || as=(setpriv --reuid="$5" --regid="$5" --clear-groups --)
	"${as[@]}" "$p" 5 &
	pid=$!
	for _ in $(seq 200); do
		line=$(grep "^pbitmapd: $p: pid $pid: " daemon.log)
		[ -n "$line" ] && break
		sleep 0.1
	done
	kill "$pid"
	wait "$pid" 2>/dev/null
	echo "$1: cached before ${2:-nothing}; $line"
	[ "$line" = "pbitmapd: $p: pid $pid: plan, 1 files, $3" ] ||
		fail "$1: want 'plan, 1 files, $3'; the daemon logged '$line'"
	resident_within "$1" "$4"
}
# cached_bytes WANT: the daemon's counter of marked bytes left out as cached,
# once its status file says so (rewritten as its children end)
cached_bytes() {
	local got
	for _ in $(seq 200); do	# 20 s: the ASan daemon on a host busy with guests
		got=$(counter cached_bytes)
		[[ $got == "$1" && $(counter pending) == 0 ]] && break
		sleep 0.1
	done
	sleep 1.1	# and no more to come: the status is written at most once a second
	got=$(counter cached_bytes)
	[[ $got == "$1" ]] || fail "cached_bytes $got, want $1: $(tr '\n' ' ' <status)"
}
exec_case cold "" "1 extents, 163840 bytes" 256-295
cached_bytes 0
exec_case first "256-271" "1 extents, 65536 bytes" 256-271,280-295
cached_bytes 65536
exec_case both "256-271 280-295" "0 extents, 0 bytes" 256-271,280-295
cached_bytes 196608
exec_case whole "0-2047" "0 extents, 0 bytes" 0-2047
cached_bytes 327680
exec_case nobody-exec "256-271 280-295" "$nobody_both" "$nobody_both_pages" 65534
cached_bytes $((327680 + ${nobody_both_left:-0}))
daemon_stop
pass "pbitmapd (SKIP_CACHED=yes, the default): a plan's cached steps left out for root's exec;" \
	"for nobody's with both runs cached: $nobody_both"
