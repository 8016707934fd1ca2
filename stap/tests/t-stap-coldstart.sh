#!/bin/bash
# Guest test (make stap-check): faults.stp and pbitmap.stp around cold starts
# of `gcc -O2 -S` (driver, cc1 and as stamped, bitmaps learned by `pbitmap
# record`) with vm.pbitmap_enabled off and on, alternating, RUNS each
# (default 3).  For every run it checks that
#   - faults.stp's major faults (gcc + cc1) equal what /usr/bin/time reports
#     for the whole command, within 2 faults or 5% (getrusage also counts the
#     faults between fork and exec, which faults.stp does not);
#   - faults.stp's read bytes equal the disk's sectors read
#     (/sys/block/vda/stat) within 5%, and its read bios are at least the
#     disk's read requests less 5% (the block layer merges bios into
#     requests; it does not split these);
#   - pbitmap.stp sees prefetches of gcc and cc1 (one per mapping of each) with
#     pages submitted when on, nothing when off;
#   - fault-map.stp's major and minor faults of cc1 (counted one by one at
#     handle_mm_fault) equal faults.stp's task counters for cc1 within 2;
# and that, as seen by stap, pbitmap on halves the major faults at least
# (medians).  Prints the comparison table.
set -euo pipefail
RUNS=${RUNS:-3}
HERE=$PWD
W=/var/tmp/t-stap
rm -rf "$W" && mkdir -p "$W" && cd "$W"
export STAP_HERE=$HERE
# shellcheck source=stap/guest-lib.sh
. "$HERE/guest-lib.sh"
stap_version_check
gcc_workload "$W"

cold() {	# condition(0|1) run-number
	local r0 r1 s0 s1
	echo "$1" >/proc/sys/vm/pbitmap_enabled
	start_stap faults "$W/faults-$1-$2.txt" progs=gcc,cc1
	start_stap pbitmap "$W/pbitmap-$1-$2.txt" progs=gcc,cc1
	start_stap fault-map "$W/map-$1-$2.txt" prog=cc1
	sync; echo 3 >/proc/sys/vm/drop_caches
	read -r r0 _ s0 _ </sys/block/vda/stat
	gcc_compile "out-$1-$2.s" /usr/bin/time -o time.out -f '%F'
	read -r r1 _ s1 _ </sys/block/vda/stat
	stop_stap
	cmp -s "out-$1-$2.s" learned.s || fail "output with pbitmap_enabled=$1 differs"
	echo "$1 $2 $(cat time.out) $((r1 - r0)) $(((s1 - s0) * 512))" >>independent
}
: >independent
for i in $(seq "$RUNS"); do
	if ((i % 2)); then cold 0 "$i"; cold 1 "$i"; else cold 1 "$i"; cold 0 "$i"; fi
done
echo 0 >/proc/sys/vm/pbitmap_enabled

python3 - "$W" <<'PY'
import os, re, statistics, sys
w = sys.argv[1]
bad = []

def kv(line):
    return dict(f.split("=", 1) for f in line.split()[1:])

rows = {"0": [], "1": []}
print("%-4s %3s | %8s %8s | %9s %9s | %10s %10s | %s" % (
    "pb", "run", "stap maj", "time maj", "stap bios", "disk reqs", "stap KiB", "disk KiB",
    "pbitmap.stp prefetches (submitted pages)"))
for line in open(os.path.join(w, "independent")):
    c, i, tmaj, dreq, dbytes = line.split()
    tmaj, dreq, dbytes = int(tmaj), int(dreq), int(dbytes)
    runs = [kv(l) for l in open(os.path.join(w, "faults-%s-%s.txt" % (c, i))) if l.startswith("run ")]
    progs = sorted(r["prog"] for r in runs)
    if progs != ["cc1", "gcc"]:
        bad.append("pb=%s run %s: faults.stp saw runs %s, expected gcc and cc1" % (c, i, progs))
    smaj = sum(int(r["majflt"]) for r in runs)
    sbios = sum(int(r["read_bios"]) for r in runs)
    sbytes = sum(int(r["read_bytes"]) for r in runs)
    pf = [kv(l) for l in open(os.path.join(w, "pbitmap-%s-%s.txt" % (c, i))) if l.startswith("prefetch ")]
    # One prefetch per mapping: exec maps each PT_LOAD segment of gcc and cc1.
    seen = sorted(set(p["file"] for p in pf))
    submitted = {f: sum(int(p["submitted"]) for p in pf if p["file"] == f) for f in seen}
    print("%-4s %3s | %8d %8d | %9d %9d | %10d %10d | %s" % (
        "on" if c == "1" else "off", i, smaj, tmaj, sbios, dreq, sbytes // 1024, dbytes // 1024,
        " ".join("%s(%s)" % (p["file"], p["submitted"]) for p in pf) or "none"))
    if abs(smaj - tmaj) > max(2, 0.05 * tmaj):
        bad.append("pb=%s run %s: stap major faults %d vs time %d" % (c, i, smaj, tmaj))
    if abs(sbytes - dbytes) > 0.05 * dbytes:
        bad.append("pb=%s run %s: stap read bytes %d vs disk %d" % (c, i, sbytes, dbytes))
    if sbios < 0.95 * dreq:
        bad.append("pb=%s run %s: stap read bios %d < disk read requests %d" % (c, i, sbios, dreq))
    if c == "1" and (seen != ["cc1", "gcc"] or 0 in submitted.values()):
        bad.append("pb=on run %s: pbitmap.stp prefetches %s, expected gcc and cc1 with pages submitted" % (i, seen))
    if c == "0" and pf:
        bad.append("pb=off run %s: pbitmap.stp saw prefetches %s" % (i, seen))
    m = [l for l in open(os.path.join(w, "map-%s-%s.txt" % (c, i))) if l.startswith("fault-map end ")]
    cc1 = [r for r in runs if r["prog"] == "cc1"]
    if not m or not cc1:
        bad.append("pb=%s run %s: no fault-map summary or no cc1 run" % (c, i))
    else:
        fm = kv(m[0].replace("fault-map end", "x"))
        for k, t in (("major", "majflt"), ("minor", "minflt")):
            if abs(int(fm[k]) - int(cc1[0][t])) > 2:
                bad.append("pb=%s run %s: fault-map.stp %s faults %s vs faults.stp %s" % (c, i, k, fm[k], cc1[0][t]))
        print("%-4s %3s   cc1: fault-map.stp %s major %s minor, faults.stp %s major %s minor" % (
            "", "", fm["major"], fm["minor"], cc1[0]["majflt"], cc1[0]["minflt"]))
    rows[c].append((smaj, sbios, sbytes, dreq))

off = [statistics.median(x) for x in zip(*rows["0"])]
on = [statistics.median(x) for x in zip(*rows["1"])]
print("\nmedians of %d cold starts   stap major faults   stap read bios   stap read MiB   disk read requests"
      % len(rows["0"]))
for name, m in (("pbitmap off", off), ("pbitmap on", on)):
    print("%-27s %19d %16d %15.1f %20d" % (name, m[0], m[1], m[2] / 2**20, m[3]))
if not on[0] * 2 <= off[0]:
    bad.append("stap major faults %d -> %d: less than 2x fewer" % (off[0], on[0]))
for b in bad:
    print("FAIL:", b)
if bad:
    sys.exit(1)
print("PASS: stap agrees with getrusage and the disk counters; major faults %d -> %d (%.1fx fewer), read bios %d -> %d"
      % (off[0], on[0], off[0] / max(on[0], 1), off[1], on[1]))
PY
