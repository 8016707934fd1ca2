#!/bin/bash
# Guest test: a full-memory cold start.  Every other cold-start test begins
# with `echo 3 > drop_caches` in an idle guest, where nearly all memory is
# free.  Real cold starts happen on a machine whose memory is full of other
# page cache: there the prefetch must still read what the bitmaps mark
# (reported: with memory full of another file's pages, the node budget,
# half of free memory above the high watermarks, was about 0 and 4 of 5
# cold starts submitted no page at all).
#
# Private copies of gdb and python3 with their libraries are stamped and
# marked with exactly the pages one run faults (ground_truth.py, as
# t-libs.sh does).  Cold starts of `gdb -batch -nx -ex 'print 1'` and
# `python3 -c 'print("x", 6 * 7)'`, pbitmap off and on (vm.pbitmap_mmap=1),
# each under two evictions, in rotated order, RUNS each (default 3):
#   drop      the usual cold_run: sync; echo 3 > drop_caches;
#   pressure  fill-evict (fill-evict.c): every file of the private copy
#             evicted with posix_fadvise(POSIX_FADV_DONTNEED), then a
#             sparse file of MemTotal + 25% read whole (its zero pages fill
#             the page cache without a disk read, and reclaim leaves free
#             memory at the watermarks), then the copy's files evicted
#             again and checked uncached (mincore).  Only the copy's files:
#             the system's ld.so, libc, bash and time stay as the fill left
#             them.  The fill is read before the measured window, and the
#             harness (time, env, bash) is read after it, as cold_run does
#             after a drop; nothing runs python in the window.
# Caveat: fadvise keeps the copies' inodes, dentries and the kernel's
# parsed-record cache, which drop_caches frees: in `pressure` a record
# already parsed is not read again, so `pressure`+on may read a few
# requests fewer than `drop`+on for that reason alone.
# Asserts, for gdb and python3 each (medians of RUNS):
#   (a) ratio_pressure >= 0.9 x ratio_drop, ratio = read requests off / on
#       in that eviction mode: the prefetch saves as much on a full machine;
#   (b) pbitmap_pages_submitted of pressure+on within 10% of drop+on's
#       (and drop+on submits pages at all);
#   (c) the output of every run identical to the reference run's;
# and that the fill really filled the page cache (Cached >= half of
# MemTotal, free memory at most 10% of MemTotal) before every pressure run;
# with pbitmap off nothing is prefetched, with it on every run prefetches and
# nothing is rejected.  The table of medians of every (program, mode,
# condition) is printed first, with free memory above the high watermarks.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
t_start=$EPOCHSECONDS
cold_begin t-pressure
cold_need_ground_truth
cold_need_sysctls pbitmap_enabled pbitmap_mmap
cold_need_counters pbitmap_prefetch pbitmap_rejected pbitmap_pages_marked \
	pbitmap_pages_submitted pbitmap_pages_cached
[ -f "$HERE/fill-evict.c" ] || fail "no fill-evict.c beside the tests"
gcc -std=c11 -O2 -Wall -Wextra -Werror -o fill-evict "$HERE/fill-evict.c" ||
	fail "cannot build fill-evict"

# The fill: a sparse file on the disk's ext4 (not tmpfs: its pages must be
# page cache that reclaim can drop), MemTotal + 25%.
fs=$(stat -f -c %T "$W")
[ "$fs" != tmpfs ] || fail "$W is on tmpfs: the fill file must be on a disk filesystem"
read -r _ memtotal_kb _ < <(grep '^MemTotal:' /proc/meminfo)
truncate -s "$((memtotal_kb * 5 / 4))K" fill || fail "cannot make the sparse fill file"
[ "$(stat -c %b fill)" = 0 ] || fail "the fill file is not sparse ($(stat -c %b fill) blocks)"
echo "fill: $((memtotal_kb * 5 / 4 / 1024)) MiB sparse file on $fs, MemTotal $((memtotal_kb / 1024)) MiB"

cold_prepare gdb gdb
cold_prepare python3 python3
GDB=(env LD_LIBRARY_PATH="$W/gdb" "$W/gdb/gdb" -batch -nx -ex 'print 1')
PY=(env LD_LIBRARY_PATH="$W/python3" "$(head -n 1 python3.files)" -c 'print("x", 6 * 7)')
# Twice warm first: whatever a first run writes (bytecode caches) is written now.
for _ in 1 2; do
	"${GDB[@]}" >/dev/null || fail "the copy of gdb does not run"
	"${PY[@]}" >/dev/null || fail "the copy of python3 does not run"
done
cold_learn gdb "${GDB[@]}"
cold_learn python3 "${PY[@]}"
sync

# pressure_evict NAME: cold_run's eviction in `pressure` (COLD_EVICT): the
# copies of NAME out, the fill read, with pbitmap off meanwhile (fill-evict
# maps the copies for mincore).  Appends to pressure-mem: label, MemTotal,
# MemFree, Cached, high watermarks (KiB), fill seconds, vda reads of the fill.
pressure_evict() {
	local name=$1 en line rc=0 files r0 r1 fill_kib fill_ms left total free cached high
	mapfile -t files <"$name.files"
	en=$(<"/proc/sys/vm/pbitmap_enabled")
	echo 0 >/proc/sys/vm/pbitmap_enabled
	read -r r0 _ </sys/block/vda/stat
	line=$(./fill-evict fill "${files[@]}") || rc=$?
	read -r r1 _ </sys/block/vda/stat
	echo "$en" >/proc/sys/vm/pbitmap_enabled
	((rc == 0)) || fail "$name: fill-evict failed (status $rc): the copies not evicted, or the fill not read"
	read -r fill_kib fill_ms left total free cached high <<<"$line"
	((left == 0 && fill_kib > 0 && high > 0)) || fail "$name: fill-evict printed '$line'"
	echo "$name $total $free $cached $high $fill_ms $((r1 - r0))" >>pressure-mem
}

# the counters before and after each run, each set from one read
KEYS=(pbitmap_prefetch pbitmap_rejected pbitmap_pages_marked pbitmap_pages_submitted pbitmap_pages_cached)
declare -A V0 V1 D
: >"$COLD_RESULTS"
: >pb-results
: >pressure-mem
bad=
for i in $(seq "$RUNS"); do
	for prog in gdb python3; do
		for cond in $(cold_order "$i" drop-off drop-on pressure-off pressure-on); do
			mode=${cond%-*} pb=${cond#*-}
			cold_cond "$pb"
			# env (the wrapper) and bash (the harness) read before the window.
			COLD_WARM="/usr/bin/env $(readlink -f /bin/bash)"
			COLD_EVICT=
			[ "$mode" = drop ] || COLD_EVICT="pressure_evict $prog"
			vmstat_snap V0 "${KEYS[@]}"
			if [ "$prog" = gdb ]; then
				cold_run "$prog-$cond" "out-$prog-$cond-$i" "${GDB[@]}"
			else
				cold_run "$prog-$cond" "out-$prog-$cond-$i" "${PY[@]}"
			fi
			vmstat_snap V1 "${KEYS[@]}"
			COLD_EVICT=
			vmstat_diff D V0 V1
			dp=${D[pbitmap_prefetch]} dj=${D[pbitmap_rejected]}
			echo "$prog-$cond ${D[pbitmap_pages_marked]} ${D[pbitmap_pages_submitted]}" \
				"${D[pbitmap_pages_cached]} $dp" >>pb-results
			cmp -s "out-$prog-$cond-$i" "$prog.want" ||
				bad+=" $prog $cond run $i: output differs from the reference;"
			((dj == 0)) || bad+=" $prog $cond run $i: pbitmap_rejected +$dj;"
			case $pb in
			off) ((dp == 0)) || bad+=" $prog $cond run $i: pbitmap_prefetch +$dp with pbitmap off;" ;;
			on) ((dp >= 1)) || bad+=" $prog $cond run $i: no prefetch with pbitmap on;" ;;
			esac
		done
	done
done
cold_reset
cold_missing

# The table, and the medians as shell variables (med_PROG_MODE_COND_FIELD).
python3 - "$COLD_RESULTS" pb-results pressure-mem med.vars <<'PY' || fail "cannot summarise the runs"
import shlex, statistics, sys
cold, pb, mem, out = sys.argv[1:]
rows = {}
for a, b in zip(open(cold), open(pb)):
    label, *v = a.split()
    label2, *w = b.split()
    assert label == label2, (label, label2)
    rows.setdefault(label, []).append([int(x) for x in v[:4]] + [float(v[4])] +
                                      [int(x) for x in w])
fields = ("majflt", "reqs", "bytes", "cache_kb", "wall", "marked", "submitted",
          "pcached", "prefetches")
print("%-20s %4s %7s %8s %8s %9s %7s %8s %9s %8s" % (
      "medians", "runs", "maj flt", "read req", "MiB read", "cache MiB", "wall s",
      "marked", "submitted", "cached"))
with open(out, "w") as f:
    for label in sorted(rows):
        v = rows[label]
        m = [statistics.median_low(col) for col in zip(*v)]
        print("%-20s %4d %7d %8d %8.1f %9.1f %7.2f %8d %9d %8d" % (
              label, len(v), m[0], m[1], m[2] / 2**20, m[3] / 1024, m[4], m[5], m[6], m[7]))
        for k, x in zip(fields, m):
            print("med_%s_%s=%s" % (label.replace("-", "_"), k, x), file=f)
print("(marked, submitted, cached: pbitmap_pages_*; cache MiB under pressure is net of"
      " what reclaim took meanwhile)")
print("submitted pages per run (in run order):")
for label in sorted(rows):
    print("  %-20s %s" % (label, " ".join(str(r[6]) for r in rows[label])))
worst = None
runs = [line.split() for line in open(mem)]
col = lambda k: [int(r[k]) for r in runs]
total, free, cached, high, ms, reqs = (col(k) for k in range(1, 7))
if runs:
    print("before the %d pressure runs: MemTotal %d MiB, high watermarks %d-%d MiB,"
          " MemFree %d-%d MiB, Cached %d-%d MiB; the fill read in %.1f-%.1f s,"
          " %d-%d vda requests meanwhile" % (
          len(runs), max(total) >> 10, min(high) >> 10, max(high) >> 10, min(free) >> 10,
          max(free) >> 10, min(cached) >> 10, max(cached) >> 10, min(ms) / 1000,
          max(ms) / 1000, min(reqs), max(reqs)))
for name in sorted(set(r[0] for r in runs)):
    print("  %s: MiB free above the high watermarks, in run order: %s" % (name, " ".join(
          "%.1f" % ((int(r[2]) - int(r[4])) / 1024) for r in runs if r[0] == name)))
for r in runs:
    t, f, c = int(r[1]), int(r[2]), int(r[3])
    if c * 2 < t:
        worst = "Cached %d MiB, less than half of MemTotal %d MiB" % (c >> 10, t >> 10)
    elif f * 10 > t:
        worst = "MemFree %d MiB, more than 10%% of MemTotal %d MiB" % (f >> 10, t >> 10)
with open(out, "a") as f:
    print("fill_bad=%s" % shlex.quote(worst or ""), file=f)
PY
fill_bad=
# shellcheck disable=SC1091
. med.vars
[ -z "$fill_bad" ] || fail "the fill did not fill the memory before every pressure run: $fill_bad"

verdict=$bad
# shellcheck disable=SC2154  # med_* come from med.vars
for prog in gdb python3; do
	eval "off_d=\$med_${prog}_drop_off_reqs on_d=\$med_${prog}_drop_on_reqs"
	eval "off_p=\$med_${prog}_pressure_off_reqs on_p=\$med_${prog}_pressure_on_reqs"
	eval "sub_d=\$med_${prog}_drop_on_submitted sub_p=\$med_${prog}_pressure_on_submitted"
	((on_d > 0 && on_p > 0)) || { verdict+=" $prog: a cold start with no read request;"; continue; }
	rd=$(awk -v a="$off_d" -v b="$on_d" 'BEGIN { printf "%.2f", a / b }')
	rp=$(awk -v a="$off_p" -v b="$on_p" 'BEGIN { printf "%.2f", a / b }')
	# (a) off_p / on_p >= 0.9 * off_d / on_d
	if ((off_p * on_d * 10 >= 9 * off_d * on_p)); then
		echo "ok: $prog: read requests off/on: drop $off_d/$on_d = ${rd}x, pressure $off_p/$on_p = ${rp}x"
	else
		verdict+=" $prog: pressure saves less: read requests off/on ${rp}x ($off_p/$on_p) against ${rd}x ($off_d/$on_d) after a drop, below 0.9x;"
	fi
	# (b) |sub_p - sub_d| <= 10% of sub_d, sub_d > 0
	d=$((sub_p - sub_d))
	if ((sub_d > 0 && ${d#-} * 10 <= sub_d)); then
		echo "ok: $prog: pages submitted with pbitmap on: drop $sub_d, pressure $sub_p"
	else
		verdict+=" $prog: pages submitted with pbitmap on: pressure $sub_p against drop $sub_d, not within 10%;"
	fi
done
echo "t-pressure: $((EPOCHSECONDS - t_start)) s"
[ -z "$verdict" ] || fail "$verdict"
echo "PASS: gdb and python3 prefetch as much on a full machine as after a drop (medians of $RUNS)"
