#!/bin/bash
# make demo: pbitmap end to end on a real Debian program, in user space.
#
#  1. copy a Debian binary (python3 by default; DEMO_PROG=/usr/bin/X to change it,
#     DEMO_ARGS for its arguments) and its shared libraries under build/demo/;
#  2. stamp them all with `pbitmap add`;
#  3. learn start-up with `pbitmap record` and print the bitmap with `pbitmap show`;
#  4. cold-start the program, page cache dropped before every run, plain and through
#     `pbitmap run`, alternating in random order, and print the medians side by side:
#     major faults (getrusage), read requests and bytes read (/sys/class/block/DEV/stat),
#     wall time.
#
# Needs root (drop_caches).  DEMO_RUNS=N sets the runs per condition (default 5).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
PB=${PBITMAP_DEMO_TOOL:-$TOP/build/pbitmap}
DEMO=$TOP/build/demo
RUNS=${DEMO_RUNS:-5}
PROG=$(readlink -f "${DEMO_PROG:-/usr/bin/python3}")
read -r -a ARGS <<<"${DEMO_ARGS:--c pass}"

die() { echo "demo: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root to drop the page cache between runs"
[ -x "$PB" ] || die "$PB not built (make)"
[ -x "$PROG" ] || die "$PROG not found"

rm -rf "$DEMO"
mkdir -p "$DEMO/lib"
cp "$PROG" "$DEMO/"
prog=$DEMO/$(basename "$PROG")
ldd "$PROG" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
	cp -L "$lib" "$DEMO/lib/"
done
export LD_LIBRARY_PATH=$DEMO/lib

echo "== stamping $prog and $(ls "$DEMO/lib" | wc -l) libraries"
"$PB" add "$prog" "$DEMO"/lib/*

echo "== learning: pbitmap record -- $(basename "$prog") ${ARGS[*]}"
"$PB" record -- "$prog" "${ARGS[@]}" >/dev/null
echo
"$PB" show "$prog"
echo
for lib in "$DEMO"/lib/*; do
	"$PB" show --json "$lib" | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
print("  %-28s %5d of %5d pages marked, %3d ranges" % (r["file"].split("/")[-1],
      r["prefetch"]["pages"], r["pages"], len(r["prefetch"]["ranges"])))'
done

# The block device that holds the demo files, for its read counters.
src=$(findmnt -n -o SOURCE --target "$DEMO" | sed 's/\[.*//')
stat_file=/sys/class/block/$(basename "$src")/stat
[ -r "$stat_file" ] || stat_file=

# This VM's disk reads ahead 8 MiB, which hides any fault pattern; use the
# kernel's default (128 KiB) during the runs and restore the setting after.
ra_file=/sys/class/block/$(basename "$src")/queue/read_ahead_kb
[ -w "$ra_file" ] || ra_file=/sys/block/$(basename "$src" | sed 's/[0-9]*$//')/queue/read_ahead_kb
ra_saved=
if [ -w "$ra_file" ]; then
	ra_saved=$(cat "$ra_file")
	trap 'echo "$ra_saved" >"$ra_file"' EXIT
	echo "${DEMO_READ_AHEAD_KB:-128}" >"$ra_file"
fi
# pbitmap itself is warm in real use (it starts every program): after each
# drop, both conditions re-read its binary and libraries, so neither pays for it.
launcher_files=("$PB" $(ldd "$PB" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'))

results=$DEMO/results.txt
: >"$results"
cold_run() {	# condition command...
	local cond=$1 r0=0 s0=0 r1=0 s1=0
	shift
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cat "${launcher_files[@]}" >/dev/null
	[ -n "$stat_file" ] && read -r r0 _ s0 _ <"$stat_file"
	/usr/bin/time -o "$DEMO/time.out" -f '%F %R %e' "$@" >/dev/null 2>&1 ||
		die "$* failed"
	[ -n "$stat_file" ] && read -r r1 _ s1 _ <"$stat_file"
	echo "$cond $(tail -1 "$DEMO/time.out") $((r1 - r0)) $(((s1 - s0) * 512))" >>"$results"
}

echo
echo "== $RUNS cold starts per condition, in random order: page cache dropped each time,"
echo "   pbitmap's own files re-read, read_ahead_kb=$(cat "$ra_file" 2>/dev/null || echo '?')"
for i in $(seq "$RUNS"); do
	if ((RANDOM % 2)); then order="plain run"; else order="run plain"; fi
	for cond in $order; do
		case $cond in
		plain) cold_run plain "$prog" "${ARGS[@]}" ;;
		run) cold_run pbitmap-run "$PB" run -- "$prog" "${ARGS[@]}" ;;
		esac
	done
done

python3 - "$results" "${stat_file:-none}" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    cond, maj, minr, wall, reqs, nbytes = line.split()
    rows.setdefault(cond, []).append((int(maj), int(minr), float(wall), int(reqs), int(nbytes)))
med = {c: [statistics.median(col) for col in zip(*v)] for c, v in rows.items()}
print("%-13s %12s %12s %14s %10s %8s" % ("condition", "major faults", "minor faults",
      "read requests", "MiB read", "wall s"))
for c in ("plain", "pbitmap-run"):
    m = med[c]
    print("%-13s %12d %12d %14d %10.1f %8.3f" % (c, m[0], m[1], m[3], m[4] / 2**20, m[2]))
p, r = med["plain"], med["pbitmap-run"]
ratio = lambda a, b: "%.2fx" % (a / b) if b else "%g->0" % a
print("%-13s %12s %12s %14s %10s %8s" % ("plain/run", ratio(p[0], r[0]), "", ratio(p[3], r[3]),
      ratio(p[4], r[4]), ratio(p[2], r[2])))
print("(medians of %d runs each; read counters from %s)" % (len(rows["plain"]), sys.argv[2]))
EOF
