#!/bin/bash
# Guest test: on a filesystem that caches files in large folios (XFS), the
# prefetch at mmap reads the marked ranges into large folios, as readahead
# of the same ranges would, and reads nothing outside them.
#
# A 16 MiB data file on a fresh XFS, its PBXZ record marking three runs
# further apart than any device's gap (at most 1 MiB, vm.pbitmap_merge_gap_kb
# -1) or a fixed vm.pbitmap_merge_gap_kb below 2 MiB (so never joined): 2 MiB at 0
# (aligned), 1 MiB at 4 MiB, and 100 pages at 9 MiB + 12 KiB (unaligned: the
# folio order is bounded by the index's alignment).  Mapped cold with
# pbitmap on (vm.pbitmap_mmap=1) by a probe that waits, by mincore(), until
# every marked page is resident (the prefetch is asynchronous; 10 s at
# most), counts the resident pages outside the marked runs, then touches
# the marked pages and looks up (pageflags.py: /proc/self/pagemap and
# /proc/kpageflags) how many are in a compound page (a folio larger than
# one page).  Checks: every marked page was read, at least 3/4 of them are in
# large folios (a prefetch through order-0 folios, as force_page_cache_ra()
# does, puts none there), at most 32 pages outside the runs are resident
# (a readahead that read its whole window again from where its large-folio
# loop stopped would read hundreds), one pbitmap_prefetch, and the bytes
# read through the mapping are the file's (sha256).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/testbed-lib.sh
. "$HERE/testbed-lib.sh"
cold_begin t-xfs-folios
trap 'cold_reset; tb_cleanup; cd /; rm -rf "$W"' EXIT
cold_need_sysctls pbitmap_enabled pbitmap_mmap pbitmap_merge_gap_kb
cold_need_counters pbitmap_prefetch pbitmap_pages_submitted
cold_missing

PAGE=$(getconf PAGESIZE)
[ "$PAGE" = 4096 ] || fail "the runs below assume 4 KiB pages (page size $PAGE)"
gap=$(cat /proc/sys/vm/pbitmap_merge_gap_kb)
((gap < 0 || gap * 1024 < 2 << 20)) || fail "vm.pbitmap_merge_gap_kb=$gap would join the runs"

xfs=$(tb_xfs)
f=$xfs/data
head -c 16M /dev/urandom >"$f" || fail "cannot write $f"
pbitmap add -q "$f" || fail "cannot stamp $f"
# START+LENGTH in bytes; the probe gets the same runs in pages.
pbitmap set -q --ranges "0+$((2 << 20))" --ranges "$((4 << 20))+$((1 << 20))" \
	--ranges "$(((9 << 20) + 12288))+$((100 * 4096))" "$f" || fail "cannot mark the runs of $f"
[ "$(getfattr --only-values -n user.pbitmap "$f" | head -c 4)" = PBXZ ] ||
	fail "$f carries no PBXZ record in user.pbitmap"
runs="0:512 1024:256 2307:100"
want=$(sha256sum "$f" | cut -d' ' -f1)
sync
echo 3 >/proc/sys/vm/drop_caches

cold_cond on
p0=$(vmstat_counter pbitmap_prefetch)
out=$(python3 - "$f" "$runs" "$HERE" <<'PY'
import ctypes, hashlib, mmap, os, sys, time
sys.path.insert(0, sys.argv[3])
from pageflags import PAGE, compound_pages, map_address
path, runs = sys.argv[1], [tuple(map(int, r.split(":"))) for r in sys.argv[2].split()]
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(path, os.O_RDONLY)
size = os.fstat(fd).st_size
npages = size // PAGE
m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
addr = map_address(path)
vec = (ctypes.c_ubyte * npages)()
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
marked = set()
for start, n in runs:
    marked.update(range(start, start + n))
deadline = time.time() + 10
while True:
    if libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) != 0:
        sys.exit("mincore: errno %d" % ctypes.get_errno())
    resident = {i for i in range(npages) if vec[i] & 1}
    if marked <= resident or time.time() > deadline:
        break
    time.sleep(0.05)
print("marked=%d" % len(marked))
print("read=%d" % len(marked & resident))
print("outside=%d" % len(resident - marked))
for i in sorted(marked):			# touch the marked pages only
    m[i * PAGE]
print("large=%d" % compound_pages(addr, sorted(marked)))
print("sha=%s" % hashlib.sha256(m[:]).hexdigest())
PY
) || fail "the probe failed: $out"
p1=$(vmstat_counter pbitmap_prefetch)
cold_reset
echo "$out"
eval "$out"
((read == marked)) || fail "only $read of the $marked marked pages were read within 10 s"
((p1 - p0 == 1)) || fail "$((p1 - p0)) prefetches for one mapping"
((large * 4 >= marked * 3)) ||
	fail "$large of the $marked prefetched pages are in large folios, fewer than 3/4 (order-0 readahead?)"
((outside <= 32)) || fail "$outside pages outside the marked runs were read (more than 32)"
[ "$sha" = "$want" ] || fail "the mapping's bytes are not the file's"
echo "PASS: XFS: $large of $marked prefetched pages in large folios; $outside pages read outside the runs"
