#!/bin/bash
# Guest test: a memory cgroup bounds the kernel's prefetch at mmap, and pays
# for pbitmap's own memory.  A 64 MiB data file on the root ext4, its PBXZ
# record (user.pbitmap) marking every page, is mapped cold (pbitmap on,
# vm.pbitmap_mmap=1) by a probe that reads /proc/vmstat and the
# memory.current, memory.high, memory.max, memory.stat inactive_file and
# memory.events of its cgroup and every ancestor right before and right
# after its mmap(), then reads the whole mapping (sha256).  The kernel gives
# one mapping's prefetch min(vm.pbitmap_max_prefetch_kb, half of what the
# node has available (free pages above the high watermarks plus reclaimable
# file pages, like MemAvailable), half the smallest room of the task's
# cgroup and its ancestors) (pbitmap_budget_take(), mm/pbitmap/core.c), where
# a cgroup's room (mem_cgroup_mm_margin(), mm/memcontrol.c) is
#   min(memory.high - usage, memory.max - usage + inactive_file / 2),
# 0 once usage reaches memory.high: memory.high is never crossed, and past
# memory.max the cgroup may reclaim half of its own inactive file pages.
# The pages are charged to the mapping task's cgroup.  Cases:
#   unlimited  the root cgroup: pbitmap_pages_submitted grows by exactly
#              vm.pbitmap_max_prefetch_kb;
#   max=1G     a cgroup with room to spare: the same (the cgroup itself
#              does not cut the prefetch);
#   max=32M    submitted is half the cgroup's room before the mmap (within
#              the per-CPU charge batches; python is warmed outside the
#              cgroup, so its inactive_file is about 0 and the room about
#              memory.max - memory.current, but it is counted), so at most
#              memory.max/2 (half of what it is unlimited: a kernel ignoring
#              the limit fails), memory.current grows by at least that much
#              during the mmap (the pages are charged to the cgroup), the
#              mmap hits the limit no time (memory.events max), no oom or
#              oom_kill;
#   nested     a cgroup without a limit inside one with memory.max=32M: the
#              parent's room bounds it the same way;
#   high       a cgroup without memory.max whose probe, started and warmed
#              in it, sets memory.high to its memory.current + 16 MiB right
#              before the mmap, less than the 64 MiB marked; mapped cold
#              with pbitmap off, then on: memory.events high rises no more
#              during the mmap with pbitmap on than off (off's mmap reads
#              nothing: 0), submitted is half the room (memory.high -
#              memory.current) within the charge batches, charged to the
#              cgroup; the high events of the whole read are printed beside;
#   kmem       pbitmap's own allocations (the record buffers, the parsed
#              record's cache entry) are charged to the mapping task's
#              cgroup: 8 files of 16 MiB (sparse), each marked at every
#              other page, so that each record parses to 2048 extents, an
#              entry of at least 32 KiB that stays cached while the files
#              are mapped, are mapped cold in a cgroup of their own, every
#              page touched, with pbitmap off, then on; memory.stat kernel
#              (all charged kernel memory: slab, large kmalloc, vmalloc),
#              read 3 s after the last change (the statistics are flushed
#              every 2 s), must grow with pbitmap on by at least half the
#              entries' extents (8 x 32 KiB / 2) more than off (the page
#              cache and its tree nodes are the same in both runs).
# Every case: one pbitmap_prefetch per mapping with pbitmap on (none off),
# and the bytes read through the mapping are the file's (sha256).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/testbed-lib.sh
. "$HERE/testbed-lib.sh"
cold_begin t-memcg-prefetch
trap 'cold_reset; tb_cleanup; cd /; rm -rf "$W"' EXIT
cold_need_sysctls pbitmap_enabled pbitmap_mmap pbitmap_max_prefetch_kb
cold_need_counters pbitmap_prefetch pbitmap_pages_submitted pbitmap_pages_cached
cold_missing

PAGE=$(getconf PAGESIZE)
LIMIT=$((32 << 20))
# The high case's memory.high: this much above the probe's usage, less than
# the marked size of the data file (64 MiB) and than the cap.
HIGH_ROOM=$((16 << 20))
# The kmem case: KFILES files of KSIZE, every other page marked.
KFILES=8
KSIZE=$((16 << 20))
# struct pbitmap_extent: two pgoff_t.
EXTENT_BYTES=16
# The cgroup's usage moves in per-CPU batches of MEMCG_CHARGE_BATCH (64)
# pages: the room the kernel saw at the mmap and the one the probe read
# just before it may differ by that much per CPU.
SLACK=$((64 * $(nproc)))
cap=$(($(cat /proc/sys/vm/pbitmap_max_prefetch_kb) * 1024 / PAGE))

head -c 64M /dev/urandom >data || fail "cannot write the data file"
pbitmap add -q data || fail "cannot stamp data"
pbitmap set -q --ranges "0+$(stat -c %s data)" data || fail "cannot mark the pages of data"
[ "$(getfattr --only-values -n user.pbitmap data | head -c 4)" = PBXZ ] ||
	fail "data carries no PBXZ record in user.pbitmap"
marked=$(pbitmap show --json data | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
print(min(r["content_size"], r["prefetch"]["pages"] * r["page_size"]) // int(sys.argv[1]))' "$PAGE") ||
	fail "cannot read the record of data"
((marked >= 2 * cap)) || fail "only $marked pages marked, fewer than twice the cap of $cap"
((marked * PAGE > HIGH_ROOM && cap * PAGE > HIGH_ROOM)) ||
	fail "memory.high's room of $((HIGH_ROOM >> 20)) MiB is not below both the $marked pages marked and the cap of $cap pages"
want=$(sha256sum data | cut -d' ' -f1)

# The kmem case's files: sparse (no disk I/O), every other page marked, so
# that each record parses to one extent per marked page.
mkdir kmem
kpages=$(seq -s, 0 2 $((KSIZE / PAGE - 1)))
for ((i = 0; i < KFILES; i++)); do
	truncate -s "$KSIZE" "kmem/f$i" || fail "cannot make kmem/f$i"
	pbitmap add -q "kmem/f$i" || fail "cannot stamp kmem/f$i"
	pbitmap set -q --pages "$kpages" "kmem/f$i" || fail "cannot mark the pages of kmem/f$i"
done
# The extents each record parses to: its prefetch runs, in pages of PAGE.
kextents=$(pbitmap show --json kmem/f* | python3 -c '
import json, sys
rs = json.load(sys.stdin)
n = {len(r["prefetch"]["ranges"]) for r in rs if r["page_size"] == int(sys.argv[1])}
print(n.pop() if len(n) == 1 and len(rs) == int(sys.argv[2]) else 0)' "$PAGE" "$KFILES") ||
	fail "cannot read the records of kmem/f*"
((kextents == KSIZE / PAGE / 2)) ||
	fail "the records of kmem/f* do not mark $((KSIZE / PAGE / 2)) runs of one page each (found $kextents)"
# What the kernel keeps cached per file: at least its extents.
kentries=$((KFILES * kextents * EXTENT_BYTES))
sync

cat >probe.py <<'PY'
# Map the file sys.argv[1] (cold) and report, as shell assignments, what its
# mmap() did: vmstat deltas; the room in pages before it (for this task's
# cgroup and each ancestor: min(memory.high - usage, memory.max - usage +
# inactive_file / 2), 0 once usage reaches memory.high; the smallest;
# "none" without a limit), the own cgroup's inactive_file in pages;
# memory.current growth; memory.events max and high during the mmap; then
# the sha256 of the mapping, the memory.events high during that whole read
# and the oom counts at the end.  With sys.argv[2] (bytes), first set the
# own cgroup's memory.high to its memory.current plus that much, once
# python has started and the file is open: right before the mmap.
import hashlib, mmap, os, sys
CG, PAGE = "/sys/fs/cgroup", os.sysconf("SC_PAGE_SIZE")

def vmstat():
    return {k: int(v) for k, v in (l.split() for l in open("/proc/vmstat"))}

def groups():		# own cgroup first, the root (which has no limit) left out
    rel = next(l.split(":", 2)[2].strip() for l in open("/proc/self/cgroup") if l.startswith("0::"))
    out = []
    while rel not in ("", "/"):
        out.append(CG + rel)
        rel = os.path.dirname(rel)
    return out

def read(path):
    return open(path).read().strip()

def stat(g, key):	# memory.stat, bytes
    for l in open(g + "/memory.stat"):
        k, v = l.split()
        if k == key:
            return int(v)
    raise SystemExit("no %s in %s/memory.stat" % (key, g))

def room(gs):
    r = None
    for g in gs:
        usage = int(read(g + "/memory.current")) // PAGE
        high, limit = read(g + "/memory.high"), read(g + "/memory.max")
        left = []
        if high != "max":
            left.append(max(int(high) // PAGE - usage, 0))
        if limit != "max":
            left.append(max(int(limit) // PAGE - usage, 0) + stat(g, "inactive_file") // PAGE // 2)
        if left:
            r = min(left) if r is None else min(r, *left)
    return r

def events(gs, key):	# memory.events counts the group's and its descendants' events
    return sum(int(l.split()[1]) for g in gs for l in open(g + "/memory.events")
               if l.split()[0] == key)

gs = groups()
fd = os.open(sys.argv[1], os.O_RDONLY)
cur = lambda: int(read(gs[0] + "/memory.current")) if gs else 0
if len(sys.argv) > 2:
    if not gs:
        raise SystemExit("asked to set memory.high in the root cgroup")
    with open(gs[0] + "/memory.high", "w") as f:
        f.write(str(cur() + int(sys.argv[2])))
r0, max0, high0, c0 = room(gs), events(gs, "max"), events(gs, "high"), cur()
inactive = stat(gs[0], "inactive_file") // PAGE if gs else None
v0 = vmstat()
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
v1 = vmstat()
c1, max1, high1 = cur(), events(gs, "max"), events(gs, "high")
d = lambda k: v1[k] - v0[k]
print("prefetch=%d submitted=%d cached=%d room=%s inactive=%s charged=%d limit_hits=%d high_mmap=%d"
      % (d("pbitmap_prefetch"), d("pbitmap_pages_submitted"), d("pbitmap_pages_cached"),
         "none" if r0 is None else r0, "none" if inactive is None else inactive,
         (c1 - c0) // PAGE, max1 - max0, high1 - high0))
digest = hashlib.sha256(m).hexdigest()
print("sha256=%s high_read=%d oom=%d oom_kill=%d" % (digest, events(gs, "high") - high1,
      events(gs, "oom"), events(gs, "oom_kill")))
PY

cat >kprobe.py <<'PY'
# Open the files sys.argv[1:] (cold), then map each and touch every page of
# each mapping; report, as shell assignments, the growth of the own
# cgroup's memory.stat kernel, slab_unreclaimable and slab_reclaimable
# (bytes) over the mmaps and reads, and the vmstat deltas of
# pbitmap_prefetch and pbitmap_cache_miss meanwhile.  memory.stat is
# flushed every 2 s (and on a read once enough has changed): each is read
# 3 s after the last change.
import mmap, os, sys, time
CG, PAGE = "/sys/fs/cgroup", os.sysconf("SC_PAGE_SIZE")
rel = next(l.split(":", 2)[2].strip() for l in open("/proc/self/cgroup") if l.startswith("0::"))
if rel in ("", "/"):
    raise SystemExit("kprobe.py runs in the root cgroup")

def vmstat():
    return {k: int(v) for k, v in (l.split() for l in open("/proc/vmstat"))}

def stats():
    time.sleep(3)
    return {k: int(v) for k, v in (l.split() for l in open(CG + rel + "/memory.stat"))}

fds = [os.open(f, os.O_RDONLY) for f in sys.argv[1:]]
s0, v0 = stats(), vmstat()
maps = [mmap.mmap(fd, 0, prot=mmap.PROT_READ) for fd in fds]
v1 = vmstat()
for m in maps:
    for off in range(0, len(m), PAGE):
        m[off]
s1 = stats()
print("kprefetch=%d kmiss=%d kernel=%d slab_unreclaimable=%d slab_reclaimable=%d"
      % (v1["pbitmap_prefetch"] - v0["pbitmap_prefetch"],
         v1.get("pbitmap_cache_miss", 0) - v0.get("pbitmap_cache_miss", 0),
         s1["kernel"] - s0["kernel"], s1["slab_unreclaimable"] - s0["slab_unreclaimable"],
         s1["slab_reclaimable"] - s0["slab_reclaimable"]))
PY

PROBLEMS=
# problem MSG: note a failed check; the test goes on with its other cases
# and fails at the end, naming each.
problem() {
	echo "problem: $*"
	PROBLEMS+="; $*"
}

# pbitmap_on: 1 when pbitmap is on (vm.pbitmap_enabled), 0 when off.
pbitmap_on() { cat /proc/sys/vm/pbitmap_enabled; }

# probe LABEL CMD...: a cold run of the probe under CMD (a cgroup wrapper),
# with $probe_high as its memory.high room when set; its report becomes
# the shell variables prefetch, submitted, ...
# shellcheck disable=SC2154  # assigned by the probe's report
probe() {
	local label=$1 out
	shift
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# python3 itself is warmed outside the cgroup: the cgroup's usage is
	# then the probe's own memory, not python's start-up reads.
	python3 -c 'import hashlib, mmap' || fail "python3 does not run"
	# shellcheck disable=SC2086  # $probe_high: no argument when empty
	out=$("$@" python3 probe.py data ${probe_high:-}) || fail "$label: the probe failed: $out"
	eval "$out"
	local r="no limit"
	[ "$room" = none ] || r="$room pages (inactive_file $inactive pages)"
	printf '%-10s submitted %5d pages (%3d MiB), cached %d, room before %s, charged %d pages; memory.events during the mmap: max %d, high %d; high during the read %d; oom %d, oom_kill %d\n' \
		"$label" "$submitted" $((submitted * PAGE >> 20)) "$cached" "$r" \
		"$charged" "$limit_hits" "$high_mmap" "$high_read" "$oom" "$oom_kill"
	[ "$sha256" = "$want" ] || fail "$label: the mapping read other bytes than the file holds"
	((prefetch == $(pbitmap_on))) || problem "$label: pbitmap_prefetch +$prefetch with vm.pbitmap_enabled=$(pbitmap_on)"
	(($(pbitmap_on) || submitted == 0)) || problem "$label: $submitted pages submitted with pbitmap off"
}

in_nested() {		# CMD...: in a cgroup without a limit inside one with memory.max=$LIMIT
	local p
	p=$(mktemp -d /sys/fs/cgroup/tb.XXXXXX) || fail "cannot create a cgroup"
	tb_defer "rmdir '$p/child' '$p'"
	echo +memory >"$p/cgroup.subtree_control" || fail "cannot enable the memory controller in $p"
	echo "$LIMIT" >"$p/memory.max"
	echo 0 >"$p/memory.swap.max" 2>/dev/null || true
	mkdir "$p/child"
	bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' in-nested "$p/child" "$@"
}

# halved LABEL: submitted is half the room the probe read before the mmap
# (within the charge batches), charged to the cgroup, no limit hit, no oom.
halved() {
	local half=$((room / 2))
	# shellcheck disable=SC2154
	{
		((submitted > 0)) || problem "$1: nothing submitted under a room of $room pages"
		((submitted <= half + SLACK && submitted + SLACK >= half)) ||
			problem "$1: $submitted pages submitted, not half the room of $room pages (within $SLACK)"
		((charged + SLACK >= submitted)) ||
			problem "$1: memory.current grew $charged pages during the mmap, $submitted were submitted: not charged to the cgroup, or reclaimed at once (memory.events high +$high_mmap)"
		((limit_hits == 0)) || problem "$1: the mmap hit memory.max $limit_hits times"
		((oom == 0 && oom_kill == 0)) || problem "$1: oom $oom, oom_kill $oom_kill"
	}
}

# bounded LABEL: the checks of a run under memory.max=$LIMIT.
bounded() {
	[ "$room" != none ] || fail "$1: the probe found no memory limit"
	# Under memory.max only, the room is at most memory.max (usage counts
	# the inactive file pages of which half is added).
	((submitted * PAGE <= LIMIT / 2)) ||
		problem "$1: $submitted pages submitted, more than memory.max/2 ($((LIMIT / 2 / PAGE)) pages)"
	halved "$1"
}

# kprobe LABEL: a cold run of kprobe.py over kmem/f* in a new cgroup
# without limits; its report becomes kprefetch, kmiss, kernel, ...
# shellcheck disable=SC2154  # assigned by the probe's report
kprobe() {
	local label=$1 out
	sync
	echo 3 >/proc/sys/vm/drop_caches
	python3 -c 'import mmap, time' || fail "python3 does not run"
	out=$(tb_in_memcg max python3 kprobe.py kmem/f*) || fail "$label: kprobe.py failed: $out"
	eval "$out"
	printf '%-10s %d prefetches (%d cache misses); memory.stat growth over the mmaps and reads: kernel %d KiB, slab_unreclaimable %d KiB, slab_reclaimable %d KiB\n' \
		"$label" "$kprefetch" "$kmiss" $((kernel >> 10)) $((slab_unreclaimable >> 10)) \
		$((slab_reclaimable >> 10))
	((kprefetch == KFILES * $(pbitmap_on))) ||
		problem "$label: pbitmap_prefetch +$kprefetch for $KFILES files with vm.pbitmap_enabled=$(pbitmap_on)"
}

cold_cond on
echo "cap: vm.pbitmap_max_prefetch_kb = $cap pages; $marked pages marked; MemFree $(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo) KiB"
probe_high=
probe unlimited env
[ "$room" = none ] || fail "unlimited: the test runs under a memory limit (room $room pages)"
((submitted == cap)) || problem "unlimited: $submitted pages submitted, expected the cap of $cap"

probe max=1G tb_in_memcg 1G
((submitted == cap)) || problem "max=1G: $submitted pages submitted, expected the cap of $cap (room $room)"

probe max=32M tb_in_memcg "$LIMIT"
bounded max=32M

probe nested in_nested
bounded nested

# memory.high, set by the probe itself: its python start-up is charged to
# the cgroup, the room is what is left after it.
probe_high=$HIGH_ROOM
cold_cond off
probe high/off tb_in_memcg max
off_high_mmap=$high_mmap
[ "$room" != none ] || fail "high/off: the probe set no memory.high"
cold_cond on
probe high/on tb_in_memcg max
[ "$room" != none ] || fail "high/on: the probe set no memory.high"
probe_high=
((off_high_mmap == 0)) ||
	problem "high/off: memory.events high rose $off_high_mmap times during an mmap that reads nothing: the probe's own memory crosses memory.high"
((high_mmap <= off_high_mmap)) ||
	problem "high: memory.events high rose $high_mmap times during the mmap with pbitmap on, $off_high_mmap with it off"
((submitted <= (HIGH_ROOM / PAGE) / 2 + SLACK)) ||
	problem "high: $submitted pages submitted, more than half of memory.high's room of $((HIGH_ROOM / PAGE)) pages (within $SLACK)"
halved high/on

echo "kmem: $KFILES files of $((KSIZE >> 20)) MiB, $kextents extents each: at least $((kentries >> 10)) KiB of cache entries"
cold_cond off
kprobe kmem/off
off_kernel=$kernel
cold_cond on
kprobe kmem/on
echo "kmem: memory.stat kernel grew $(((kernel - off_kernel) >> 10)) KiB more with pbitmap on than off (at least $((kentries / 2 >> 10)) KiB asked)"
((kernel - off_kernel >= kentries / 2)) ||
	problem "kmem: memory.stat kernel grew $(((kernel - off_kernel) >> 10)) KiB more with pbitmap on than off, less than half the $((kentries >> 10)) KiB of extents the kernel keeps cached: pbitmap's allocations are not charged to the cgroup"
cold_reset
[ -z "$PROBLEMS" ] || fail "${PROBLEMS#; }"
echo "PASS: prefetch of $cap pages unlimited and under max=1G; under memory.max=32M (alone and as the parent's limit) and memory.high=current+$((HIGH_ROOM >> 20))M half the cgroup's room, charged to it, no limit hit, no high event beyond pbitmap off's, no oom; data intact; pbitmap's cache entries charged to the cgroup (memory.stat kernel)"
