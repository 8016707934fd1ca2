#!/bin/bash
# Guest test: a memory cgroup bounds the kernel's prefetch at mmap.  A 64 MiB
# data file on the root ext4, its PBXZ record (user.pbitmap) marking every
# page, is mapped cold (pbitmap on, vm.pbitmap_mmap=1) by a probe that reads
# /proc/vmstat and the memory.current, memory.max and memory.events of its
# cgroup and every ancestor right before and right after its mmap(), then
# reads the whole mapping (sha256).  The kernel gives one mapping's prefetch
# min(vm.pbitmap_max_prefetch_kb, half the node's free memory above its high
# watermarks, half the smallest memory.max - memory.current of the task's
# cgroup and its ancestors) (pbitmap_memory_budget(), mm/pbitmap/core.c), and
# charges the pages to the mapping task's cgroup.  Four cases:
#   unlimited  the root cgroup: pbitmap_pages_submitted grows by exactly
#              vm.pbitmap_max_prefetch_kb;
#   max=1G     a cgroup with room to spare: the same (the cgroup itself
#              does not cut the prefetch);
#   max=32M    submitted is half the cgroup's margin before the mmap (within
#              the per-CPU charge batches), so at most memory.max/2 (half
#              of what it is unlimited: a kernel ignoring the limit fails),
#              memory.current grows by at least that much during the mmap
#              (the pages are charged to the cgroup), the mmap hits the limit
#              no time (memory.events max), no oom or oom_kill;
#   nested     a cgroup without a limit inside one with memory.max=32M: the
#              parent's margin bounds it the same way.
# Every case: one pbitmap_prefetch, and the bytes read through the mapping
# are the file's (sha256).
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
# The cgroup's usage moves in per-CPU batches of MEMCG_CHARGE_BATCH (64)
# pages: the margin the kernel saw at the mmap and the one the probe read
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
want=$(sha256sum data | cut -d' ' -f1)
sync

cat >probe.py <<'PY'
# Map the file sys.argv[1] (cold) and report, as shell assignments, what its
# mmap() did: vmstat deltas, the cgroup margin in pages before it (the
# smallest memory.max - memory.current of this task's cgroup and its
# ancestors; "none" without a limit), memory.current growth, limit hits;
# then the sha256 of the mapping and the oom counts at the end.
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

def margin(gs):
    m = None
    for g in gs:
        limit = read(g + "/memory.max")
        if limit != "max":
            left = max(int(limit) - int(read(g + "/memory.current")), 0) // PAGE
            m = left if m is None else min(m, left)
    return m

def events(gs, key):	# memory.events counts the group's and its descendants' events
    return sum(int(l.split()[1]) for g in gs for l in open(g + "/memory.events")
               if l.split()[0] == key)

gs = groups()
fd = os.open(sys.argv[1], os.O_RDONLY)
cur = lambda: int(read(gs[0] + "/memory.current")) if gs else 0
m0, max0, c0 = margin(gs), events(gs, "max"), cur()
v0 = vmstat()
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
v1 = vmstat()
c1, max1 = cur(), events(gs, "max")
d = lambda k: v1[k] - v0[k]
print("prefetch=%d submitted=%d cached=%d margin=%s charged=%d limit_hits=%d"
      % (d("pbitmap_prefetch"), d("pbitmap_pages_submitted"), d("pbitmap_pages_cached"),
         "none" if m0 is None else m0, (c1 - c0) // PAGE, max1 - max0))
print("sha256=%s oom=%d oom_kill=%d" % (hashlib.sha256(m).hexdigest(),
      events(gs, "oom"), events(gs, "oom_kill")))
PY

# probe LABEL CMD...: a cold run of the probe under CMD (a cgroup wrapper);
# its report becomes the shell variables prefetch, submitted, ...
# shellcheck disable=SC2154  # assigned by the probe's report
probe() {
	local label=$1 out
	shift
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# python3 itself is warmed outside the cgroup: the cgroup's usage is
	# then the probe's own memory, not python's start-up reads.
	python3 -c 'import hashlib, mmap' || fail "python3 does not run"
	out=$("$@" python3 probe.py data) || fail "$label: the probe failed: $out"
	eval "$out"
	printf '%-10s submitted %5d pages (%3d MiB), cached %d, cgroup margin before %s pages, charged %d pages, limit hits %d, oom %d, oom_kill %d\n' \
		"$label" "$submitted" $((submitted * PAGE >> 20)) "$cached" "$margin" \
		"$charged" "$limit_hits" "$oom" "$oom_kill"
	[ "$sha256" = "$want" ] || fail "$label: the mapping read other bytes than the file holds"
	((prefetch == 1)) || fail "$label: pbitmap_prefetch +$prefetch, expected +1"
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

# bounded LABEL: the checks of a run under memory.max=$LIMIT.
bounded() {
	local half=$((margin / 2))
	# shellcheck disable=SC2154
	{
		((submitted > 0)) || fail "$1: nothing submitted under a margin of $margin pages"
		((submitted * PAGE <= LIMIT / 2)) ||
			fail "$1: $submitted pages submitted, more than memory.max/2 ($((LIMIT / 2 / PAGE)) pages)"
		((submitted <= half + SLACK && submitted + SLACK >= half)) ||
			fail "$1: $submitted pages submitted, not half the margin of $margin pages (within $SLACK)"
		((charged + SLACK >= submitted)) ||
			fail "$1: memory.current grew $charged pages during the mmap, $submitted were submitted: not charged to the cgroup"
		((limit_hits == 0)) || fail "$1: the mmap hit memory.max $limit_hits times"
		((oom == 0 && oom_kill == 0)) || fail "$1: oom $oom, oom_kill $oom_kill"
	}
}

cold_cond on
echo "cap: vm.pbitmap_max_prefetch_kb = $cap pages; $marked pages marked; MemFree $(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo) KiB"
probe unlimited env
[ "$margin" = none ] || fail "unlimited: the test runs under a memory limit (margin $margin pages)"
((submitted == cap)) || fail "unlimited: $submitted pages submitted, expected the cap of $cap"

probe max=1G tb_in_memcg 1G
((submitted == cap)) || fail "max=1G: $submitted pages submitted, expected the cap of $cap (margin $margin)"

probe max=32M tb_in_memcg "$LIMIT"
bounded max=32M

probe nested in_nested
bounded nested
cold_reset
echo "PASS: prefetch of $cap pages unlimited and under max=1G; under memory.max=32M (alone and as the parent's limit) half the cgroup's margin, charged to it, no limit hit, no oom; data intact"
