#!/bin/bash
# Guest test: cold starts of `gcc -O2 -S` (driver, cc1 and as stamped, bitmaps
# learned by `pbitmap record`) with vm.pbitmap_enabled off and on, page cache
# dropped before each run, in alternating order.  Asserts identical output, fewer
# major faults, and at least 2x fewer read requests (/sys/block/vda/stat) with
# pbitmap on; prints the medians.  RUNS=N runs per condition (default 3).
# Then that a look is not a use: fincore(1), which maps files PROT_NONE to
# ask mincore(), finds the stamped copies uncached after a drop and
# pbitmap submits nothing for its mappings, while one PROT_READ mapping of
# cc1 (not touched) gets its marked pages read (up to
# vm.pbitmap_max_prefetch_kb).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=/var/tmp/t-gcc-prefetch
RUNS=${RUNS:-3}
rm -rf "$W" && mkdir -p "$W" && cd "$W"
# fail (leaves pbitmap off), vmstat_counter, reads_settle.
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"

# shellcheck source=kernel-patch/tests/gcc-workload.sh
. "$HERE/gcc-workload.sh"
gcc_workload "$W"
# -S stops before the assembler: as is stamped as the issue asks, but only the
# driver and cc1 run, so only they must have learned pages.
for f in gcc cc1; do
	pbitmap show --json "bin/$f" | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
print("%-4s %5d of %5d pages marked in %d ranges" % (sys.argv[1], r["prefetch"]["pages"],
      r["pages"], len(r["prefetch"]["ranges"])))
if not r["prefetch"]["pages"]:
    sys.exit("nothing learned")' "$f" || fail "record learned nothing for $f"
done

cold() {	# condition run-number
	local r0 r1 s0 s1 maj
	echo "$1" >/proc/sys/vm/pbitmap_enabled
	sync; echo 3 >/proc/sys/vm/drop_caches
	read -r r0 _ s0 _ </sys/block/vda/stat
	gcc_compile "out-$1-$2.s" /usr/bin/time -o time.out -f '%F %e'
	read -r r1 _ s1 _ </sys/block/vda/stat
	read -r maj wall <time.out
	echo "$1 $maj $((r1 - r0)) $(((s1 - s0) * 512)) $wall" >>results
	cmp -s "out-$1-$2.s" learned.s || fail "output with pbitmap_enabled=$1 differs"
}
: >results
for i in $(seq "$RUNS"); do
	if ((i % 2)); then cold 0 "$i"; cold 1 "$i"; else cold 1 "$i"; cold 0 "$i"; fi
done
echo 0 >/proc/sys/vm/pbitmap_enabled

python3 - results <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    c, maj, reqs, nbytes, wall = line.split()
    rows.setdefault(c, []).append((int(maj), int(reqs), int(nbytes), float(wall)))
med = {c: [statistics.median(x) for x in zip(*v)] for c, v in rows.items()}
print("%-12s %12s %14s %10s %8s" % ("pbitmap", "major faults", "read requests", "MiB read", "wall s"))
for c, name in (("0", "off"), ("1", "on")):
    m = med[c]
    print("%-12s %12d %14d %10.1f %8.2f" % (name, m[0], m[1], m[2] / 2**20, m[3]))
off, on = med["0"], med["1"]
if not on[0] < off[0]:
    sys.exit("FAIL: major faults did not drop (%d -> %d)" % (off[0], on[0]))
if not on[1] * 2 <= off[1]:
    sys.exit("FAIL: read requests %d -> %d, less than 2x fewer" % (off[1], on[1]))
print("PASS: read requests %.2fx fewer, major faults %d -> %d (medians of %d)"
      % (off[1] / max(on[1], 1), off[0], on[0], len(rows["0"])))
PY

# --- A PROT_NONE mapping is a look, not a use.
# The counters are read, and cc1's pages counted by fincore after the
# PROT_READ mapping, once no read is in flight (reads_settle): mincore()
# counts only pages already read.
marked=$(pbitmap show --json bin/cc1 | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["prefetch"]["pages"])')
# What one mapping may read: vm.pbitmap_max_prefetch_kb, in pages.
want=$(($(cat /proc/sys/vm/pbitmap_max_prefetch_kb) / 4))
((want > marked)) && want=$marked
echo 1 >/proc/sys/vm/pbitmap_enabled
sync; echo 3 >/proc/sys/vm/drop_caches
sub0=$(vmstat_counter pbitmap_pages_submitted)
cached=$(fincore --noheadings --raw --output PAGES bin/gcc bin/cc1 | paste -sd' ')
reads_settle
sub1=$(vmstat_counter pbitmap_pages_submitted)
[ "$sub1" = "$sub0" ] || fail "fincore's PROT_NONE mappings got $((sub1 - sub0)) pages submitted"
[ "$cached" = "0 0" ] || fail "fincore of the stamped gcc and cc1 after a drop: $cached pages cached, not 0 0"
c1=$(vmstat_counter pbitmap_pages_cached) p1=$(vmstat_counter pbitmap_prefetch)
python3 -c 'import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
m.close()' bin/cc1
reads_settle
sub2=$(vmstat_counter pbitmap_pages_submitted) c2=$(vmstat_counter pbitmap_pages_cached) p2=$(vmstat_counter pbitmap_prefetch)
echo 0 >/proc/sys/vm/pbitmap_enabled
cached=$(fincore --noheadings --raw --output PAGES bin/cc1)
((p2 > p1)) || fail "one PROT_READ mapping of cc1 was not prefetched"
# Submitted, or found cached (python3's own start may read none of cc1,
# but the count does not depend on it).
((sub2 - sub1 + c2 - c1 >= want)) ||
	fail "one PROT_READ mapping of cc1: $((sub2 - sub1)) pages submitted and $((c2 - c1)) found cached, fewer than $want of its $marked marked"
((cached >= want)) || fail "after a PROT_READ mapping of cc1, $cached pages cached, fewer than $want of its $marked marked"
echo "PASS: fincore (PROT_NONE): 0 pages submitted, gcc and cc1 uncached; one PROT_READ mapping of cc1: $((sub2 - sub1)) submitted, $((c2 - c1)) found cached ($marked marked), then $cached cached"
