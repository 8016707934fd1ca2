#!/bin/bash
# Guest test: an executable's start-up plan (Documentation/mm/pbitmap.rst,
# "Start-up plans"), read at exec with its record and submitted in one batch.
#
# Built in the guest: prog, a small program linked (absolute RUNPATH) with
# libbig.so, a private library of 2 MiB, and libtiny.so, one far below the
# readahead window and not stamped; prog dlopen()s mod.so (2 MiB) by its
# absolute path and touches scattered pages of libbig.so and mod.so, and
# reads three data files whole with read(2): conf.txt (below the readahead
# window) and big.dat (above it) each in one read asking for all of it,
# part.txt (below the window) 4 KiB at a time; and reach.so and small.so
# (2 MiB, and below the window), modules in a directory only root may
# search.  The libraries are stamped
# and marked with exactly the pages one cold run faults (ground_truth.py);
# prog gets a plan area and `pbitmap plan prog libbig.so mod.so`.
#
# Asserted, from /proc/vmstat deltas of single cold starts:
#   - plan: one plan run, both files opened, no skip, no rejection; one
#     record read in all (the executable's: pbitmap_cache_miss 1), the
#     libraries' mappings covered by the plan instead (pbitmap_plan_covered
#     at least 2) and not looked up; the same output as without pbitmap;
#   - plan against per-file records (a copy of prog without a plan) and
#     off, medians of RUNS (default 3) cold starts, order rotated: fewer
#     read requests with the plan than with records, which read each
#     library's record at mmap ("records read": cache misses less
#     unstamped files);
#   - learned: a copy of prog with an empty plan area, run with
#     vm.pbitmap_learn=1 loading hidden/reach.so (a directory only root may
#     search): the plan's files above the readahead window are libbig.so
#     alone, not the private path; the same loading hidden/small.so: no
#     file of hidden/ listed, small or not; run again loading mod.so: they are
#     libbig.so then mod.so (pbitmap show --json), the files at or below
#     the window listed whole, one range each, libtiny.so among them and
#     conf.txt, which prog reads with read(2), not big.dat (above the
#     window) nor part.txt (its first read asks for 4 KiB of 8), and
#     the next cold start follows it (one plan run, every file opened, one
#     record read);
#   - libtiny.so replaced after that (a new inode): skipped and counted,
#     and the plan still covers libbig.so and mod.so (one record read): a
#     small file is never looked up at mmap, so skipping it leaves nothing
#     to cover;
#   - a copy owned by nobody and stamped --learn=every, learned from root's
#     run (vm.pbitmap_learn=2): its plan lists libbig.so and mod.so and no
#     file at or below the window, mapped or read (a file without a record is listed only
#     from a learner that owns the executable);
#   - a library replaced after the plan was written (a new inode, its
#     record copied along): skipped and counted (pbitmap_plan_skip_mismatch
#     1), the program runs, and with a file skipped nothing is covered:
#     every record is read at its mmap (3);
#   - a plan naming a file in a directory the exec'ing user (nobody) cannot
#     search: pbitmap_plan_skip_mismatch 1, and no more of that file cached
#     after the start than after the same start without a plan (fincore);
#     the program runs;
#   - a set-uid copy exec'd by nobody: no plan read (pbitmap_plan_skip_secure
#     1, pbitmap_plan_exec 0); the program runs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-plan
cold_need_ground_truth
cold_need_counters pbitmap_plan_exec pbitmap_plan_files pbitmap_plan_covered \
	pbitmap_plan_skip_mismatch pbitmap_plan_skip_secure \
	pbitmap_plan_reject_header pbitmap_cache_miss pbitmap_unstamped
cold_missing
chmod 755 "$W"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

# A library of 2 MiB of read-only data and code that touches every 37th
# of its 4 KiB pages: far above the readahead window, with its marked
# pages scattered.
gen_lib() {
	python3 - "$1" "$2" <<'EOF'
import sys
name, fn = sys.argv[1], sys.argv[2]
with open(name + ".c", "w") as f:
    f.write("static const unsigned char blob[2 << 20] = { %s };\n" %
            ",".join(str(i % 251 + 1) for i in range(0, 2 << 20, 4096)))
    f.write("""
unsigned long %s(void)
{
	unsigned long s = 0;

	for (unsigned long i = 0; i < sizeof(blob); i += 37 * 4096)
		s += ((const volatile unsigned char *)blob)[i];
	return s;
}
""" % fn)
EOF
}
gen_lib libbig big_sum
gen_lib mod mod_sum
gen_lib reach mod_sum
echo 'unsigned long mod_sum(void) { return 2; }' >small.c
echo 'int tiny(void) { return 1; }' >libtiny.c
cat >prog.c <<EOF
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
unsigned long big_sum(void);
int tiny(void);
static char buf[1 << 20];
/* Bytes of a file read whole with read(2), CHUNK bytes a call, or -1. */
static long read_whole(const char *name, size_t chunk)
{
	long total = 0;
	ssize_t n;
	int fd = open(name, O_RDONLY);

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, chunk)) > 0)
		total += n;
	close(fd);
	return n < 0 ? -1 : total;
}
int main(int argc, char **argv)
{
	const char *mod = argc > 1 ? argv[1] : "$W/mod.so";
	void *h = dlopen(mod, RTLD_NOW);
	unsigned long (*f)(void) = h ? (unsigned long (*)(void))dlsym(h, "mod_sum") : 0;

	printf("read %ld %ld %ld\n", read_whole("$W/conf.txt", sizeof(buf)),
	       read_whole("$W/big.dat", sizeof(buf)), read_whole("$W/part.txt", 4096));
	printf("big %lu tiny %d mod %s\n", big_sum(), tiny(), f ? "loaded" : "absent");
	if (f)
		printf("mod %lu\n", f());
	return 0;
}
EOF
gcc -O1 -shared -fPIC -o libbig.so libbig.c || fail "cannot build libbig.so"
gcc -O1 -shared -fPIC -o mod.so mod.c || fail "cannot build mod.so"
gcc -O1 -shared -fPIC -o libtiny.so libtiny.c || fail "cannot build libtiny.so"
ra_kb=$(cat /sys/block/vda/queue/read_ahead_kb)
head -c 8192 /dev/urandom >conf.txt
head -c $((ra_kb * 2048)) /dev/urandom >big.dat
head -c 8192 /dev/urandom >part.txt
chmod 644 conf.txt big.dat part.txt
(($(stat -c %s libtiny.so) <= ra_kb * 1024)) ||
	fail "libtiny.so is $(stat -c %s libtiny.so) bytes, above the readahead window ($ra_kb KiB)"
mkdir -m 700 hidden
gcc -O1 -shared -fPIC -o hidden/reach.so reach.c || fail "cannot build reach.so"
gcc -O1 -shared -fPIC -o hidden/small.so small.c || fail "cannot build small.so"
gcc -O1 -o prog prog.c -L"$W" -lbig -ltiny -Wl,-rpath,"$W" -ldl || fail "cannot build prog"
rm -f ./*.c
./prog >want.out || fail "prog does not run"
grep -q 'mod loaded' want.out || fail "prog did not load mod.so: $(cat want.out)"
grep -qx "read 8192 $((ra_kb * 2048)) 8192" want.out ||
	fail "prog did not read conf.txt, big.dat and part.txt: $(cat want.out)"

pbitmap add -q libbig.so mod.so hidden/reach.so || fail "cannot stamp the libraries"
# Pages of its own: a file whose record marks none is never listed anyway.
pbitmap set --pages 0-3 hidden/reach.so || fail "cannot mark hidden/reach.so"
pbitmap add -q --plan-size 16K prog || fail "cannot stamp prog with a plan area"
printf '%s\n' "$W/prog" "$W/libbig.so" "$W/mod.so" >plan.files
cold_learn plan ./prog
cp --preserve=xattr prog prog-records
pbitmap plan prog libbig.so mod.so || fail "pbitmap plan"
pbitmap plan --clear prog-records || fail "pbitmap plan --clear"
cp --preserve=xattr prog-records prog-learn
pbitmap show prog | sed -n '/plan/,$p'
sync

# snap: every pbitmap counter, for deltas.  /proc/vmstat is read whole
# before grep starts: in a pipeline, grep's exec ran beside the read, and
# its own look-ups (after the enable that cleared every inode's flags, the
# first since) could be cut by it: the miss counted before the read, its
# "unstamped" after, one record fewer in the run that followed ("without
# a plan 2 records read, want 3", CI of dd1ddea and of 0ac7013).
snap() {
	local text
	text=$(</proc/vmstat)
	grep '^pbitmap_' <<<"$text" >"$1"
}
delta() {
	local k=$1 a b
	a=$(awk -v k="$k" '$1 == k { print $2 }' "$2")
	b=$(awk -v k="$k" '$1 == k { print $2 }' "$3")
	echo $((b - a))
}
# The look-ups of each run, by tracepoint, kept in LABEL.lookups: a run
# with another count of records read than asserted names the files looked up.
T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T" || fail "cannot mount tracefs"
[ -d "$T/events/pbitmap/pbitmap_lookup" ] || fail "the kernel has no pbitmap_lookup tracepoint"
# one LABEL CMD...: a cold start with pbitmap on; the deltas in LABEL.d.
one() {
	local label=$1
	shift
	snap "$label.0"
	echo >"$T/trace"
	echo 1 >"$T/events/pbitmap/pbitmap_lookup/enable"
	cold_run "$label" "$label.out" "$@"
	echo 0 >"$T/events/pbitmap/pbitmap_lookup/enable"
	grep -o 'name=[^ ]* result=[a-z]*' "$T/trace" >"$label.lookups" || true
	snap "$label.1"
	# One awk for every counter: two processes per counter cost a TCG
	# guest seconds a cold start.
	awk 'NR == FNR { a[$1] = $2; next } { print $1, $2 - a[$1] }' "$label.0" "$label.1" >"$label.d"
}
d() { awk -v k="$2" '$1 == k { print $2 }' "$1.d"; }
# Records read in LABEL's run: lookups that missed the cache, less those of
# unstamped files (the system's libc and ld.so, time, true).
reads() { echo $(($(d "$1" pbitmap_cache_miss) - $(d "$1" pbitmap_unstamped))); }

problems=
for i in $(seq 1 "$RUNS"); do
	for c in $(cold_order "$i" off records plan); do
		case $c in
		off)	cold_cond off; one off ./prog ;;
		records) cold_cond on; one records ./prog-records ;;
		plan)	cold_cond on; one plan ./prog ;;
		esac
		cmp -s "$c.out" want.out || problems+=" $c run $i: output differs;"
	done
	[ "$(d plan pbitmap_plan_exec)" = 1 ] || problems+=" run $i: plan_exec $(d plan pbitmap_plan_exec), want 1;"
	[ "$(d plan pbitmap_plan_files)" = 2 ] || problems+=" run $i: plan_files $(d plan pbitmap_plan_files), want 2;"
	[ "$(reads plan)" = 1 ] ||
		problems+=" run $i: $(reads plan) records read with a plan, want 1 (the executable's);"
	[ "$(d plan pbitmap_plan_covered)" -ge 2 ] ||
		problems+=" run $i: plan_covered $(d plan pbitmap_plan_covered), want at least 2;"
	for k in pbitmap_plan_skip_mismatch pbitmap_plan_skip_secure \
		 pbitmap_rejected pbitmap_plan_reject_header pbitmap_plan_reject_files \
		 pbitmap_plan_reject_names pbitmap_plan_reject_steps pbitmap_plan_reject_canonical \
		 pbitmap_plan_reject_order; do
		[ "$(d plan $k)" = 0 ] || problems+=" run $i: $k $(d plan $k);"
	done
	[ "$(reads records)" = 3 ] ||
		problems+=" run $i: without a plan $(reads records) records read, want 3 (look-ups: $(tr '\n' ' ' <records.lookups));"
	[ "$(d records pbitmap_plan_exec)" = 0 ] || problems+=" run $i: an empty plan was run;"
done
cold_reset
cold_medians
echo "plan: ${med_plan_reqs} read requests, per-file records ${med_records_reqs}, off ${med_off_reqs}"
[ -z "$problems" ] || fail "$problems"
((med_plan_reqs < med_records_reqs)) ||
	fail "the plan made $med_plan_reqs read requests, per-file records $med_records_reqs: not fewer"
echo "ok: plan read once, the libraries covered, not looked up; fewer requests than records"

# A plan learned by the kernel: one run of a copy with an empty plan area.
trap 'echo 0 >"$T/events/pbitmap/pbitmap_lookup/enable"; learn_reset; cold_reset; cd /; rm -rf "$W"' EXIT
echo 0 >/proc/sys/vm/pbitmap_learn_interval_s
echo 1 >/proc/sys/vm/pbitmap_learn
cold_cond on
# Read with read(2) but never to be listed: above the window, or not read
# whole by its first read.
export NOT_LISTED="$W/big.dat:$W/part.txt"
# learned_check PROG TINY FILE...: the files of PROG's learned plan larger
# than the readahead window are exactly FILE..., in order; the files of
# TINY, colon-separated (or, with TINY "-", no file at or below the
# window) are among the others, each
# listed whole (one range from 0 to the end of the file), /etc/ld.so.cache
# among them when it is that small; no file of $W/hidden is listed.  Sets
# nr_learned to the number of files listed.
learned_check() {
	local prog=$1 tiny=$2
	shift 2
	pbitmap show --json "$prog" >learned.json || fail "pbitmap show $prog"
	python3 - learned.json "$((ra_kb * 1024))" "$W/hidden/" "$tiny" "$@" >learned.nr <<'PY' ||
import json, os, sys
rec = json.load(open(sys.argv[1]))[0]
window, hidden, tiny, want = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
plan = rec.get("plan", {"files": [], "steps": []})
files = plan["files"]
big = [f["path"] for f in files if f["size"] > window]
if big != want:
    sys.exit("learned plan lists %s above the readahead window, want %s" % (big, want))
if not all(f["state"] == "current" for f in files):
    sys.exit("learned plan: %s" % files)
if any(f["path"].startswith(hidden) for f in files):
    sys.exit("learned plan lists a file of %s" % hidden)
never = [f["path"] for f in files if f["path"] in os.environ["NOT_LISTED"].split(":")]
if never:
    sys.exit("learned plan lists %s" % never)
small = [f["path"] for f in files if f["size"] <= window]
if tiny == "-":
    if small:
        sys.exit("learned plan lists files without a record: %s" % small)
else:
    for t in tiny.split(":"):
        if t not in small:
            sys.exit("learned plan does not list %s: %s" % (t, small))
    cache = "/etc/ld.so.cache"
    if (os.path.getsize(cache) <= window) != (cache in small):
        sys.exit("%s is %d bytes (window %d) and %slisted" %
                 (cache, os.path.getsize(cache), window, "" if cache in small else "not "))
for i, f in enumerate(files):
    steps = [s for s in plan["steps"] if s[0] == i]
    if f["size"] <= window and steps != [[i, 0, (f["size"] + 4095) // 4096]]:
        sys.exit("learned plan: %s (%d bytes) not listed whole: %s" % (f["path"], f["size"], steps))
print("learned plan: " + ", ".join(want) + "; whole: " + (", ".join(small) or "none") +
      "; %d ranges" % len(plan["steps"]), file=sys.stderr)
print(len(files))
PY
		fail "the learned plan: $(pbitmap show "$prog" | sed -n '/plan/,$p')"
	nr_learned=$(cat learned.nr)
}
echo 1 >/proc/sys/vm/pbitmap_learn
one learning-private ./prog-learn "$W/hidden/reach.so"
grep -q 'mod loaded' learning-private.out || fail "root could not load hidden/reach.so"
learn_flush
learned_check prog-learn "$W/libtiny.so:$W/conf.txt" "$W/libbig.so"
echo 1 >/proc/sys/vm/pbitmap_learn
one learning-private-small ./prog-learn "$W/hidden/small.so"
grep -q 'mod loaded' learning-private-small.out || fail "root could not load hidden/small.so"
learn_flush
learned_check prog-learn "$W/libtiny.so:$W/conf.txt" "$W/libbig.so"
echo 1 >/proc/sys/vm/pbitmap_learn
one learning ./prog-learn
learn_flush
learn_reset
learned_check prog-learn "$W/libtiny.so:$W/conf.txt" "$W/libbig.so" "$W/mod.so"
one learned ./prog-learn
cmp -s learned.out want.out || fail "the learned plan's run: $(cat learned.out)"
[ "$(d learned pbitmap_plan_exec)" = 1 ] && [ "$(d learned pbitmap_plan_files)" = "$nr_learned" ] &&
	[ "$(reads learned)" = 1 ] ||
	fail "following the learned plan: plan_exec $(d learned pbitmap_plan_exec), files $(d learned pbitmap_plan_files) of $nr_learned, records read $(reads learned)"
echo "ok: the kernel learned the plan (libbig.so, mod.so; $((nr_learned - 2)) small files whole, conf.txt, read with read(2), among them) and the next start follows it"

# A small file of the learned plan replaced: skipped, the rest still covered.
cp libtiny.so libtiny.new && mv libtiny.new libtiny.so
one tiny-replaced ./prog-learn
cmp -s tiny-replaced.out want.out || fail "after libtiny.so was replaced: $(cat tiny-replaced.out)"
[ "$(d tiny-replaced pbitmap_plan_skip_mismatch)" = 1 ] &&
	[ "$(d tiny-replaced pbitmap_plan_files)" = $((nr_learned - 1)) ] &&
	[ "$(reads tiny-replaced)" = 1 ] ||
	fail "replaced small library: plan_skip_mismatch $(d tiny-replaced pbitmap_plan_skip_mismatch) (want 1), files $(d tiny-replaced pbitmap_plan_files) (want $((nr_learned - 1))), records read $(reads tiny-replaced) (want 1: libbig.so and mod.so still covered)"
echo "ok: a replaced small library is skipped and counted; the plan still covers the others"

# Learned from a learner that does not own the executable: no small files.
cp --preserve=xattr prog-records prog-every
pbitmap add -q --learn=every prog-every || fail "pbitmap add --learn=every prog-every"
chown 65534 prog-every
echo 0 >/proc/sys/vm/pbitmap_learn_interval_s
echo 2 >/proc/sys/vm/pbitmap_learn
one learning-every ./prog-every
learn_flush
learn_reset
cmp -s learning-every.out want.out || fail "prog-every: $(cat learning-every.out)"
learned_check prog-every - "$W/libbig.so" "$W/mod.so"
echo "ok: learned from root's run of nobody's copy: libbig.so and mod.so, no file without a record"

# A library replaced after the plan was written.
cold_cond on
cp --preserve=xattr libbig.so libbig.new && mv libbig.new libbig.so
one replaced ./prog
cmp -s replaced.out want.out || fail "after libbig.so was replaced: $(cat replaced.out)"
[ "$(d replaced pbitmap_plan_skip_mismatch)" = 1 ] ||
	fail "replaced library: plan_skip_mismatch $(d replaced pbitmap_plan_skip_mismatch), want 1"
[ "$(d replaced pbitmap_plan_files)" = 1 ] ||
	fail "replaced library: plan_files $(d replaced pbitmap_plan_files), want 1 (mod.so)"
[ "$(reads replaced)" = 3 ] ||
	fail "replaced library: $(reads replaced) records read, want 3 (a plan with a file skipped covers none)"
echo "ok: a replaced library is skipped and counted; the records are read"

# A file the exec'ing user cannot reach: not opened, nothing of it read
# for the plan.  What of it is cached after nobody's start is compared with
# the same start without a plan: the plan must add nothing.
# cached_after_nobody LABEL: the bytes of hidden/reach.so cached after a
# cold start by nobody; the counters' deltas in LABEL.0/LABEL.1.
cached_after_nobody() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	snap "$1.0"
	"${NOBODY[@]}" ./prog "$W/hidden/reach.so" >"$1.out" || fail "prog as nobody failed"
	snap "$1.1"
	grep -q 'mod absent' "$1.out" || fail "nobody could load hidden/reach.so: $(cat "$1.out")"
	# fincore maps the file to call mincore(): with pbitmap on, that
	# mapping of a stamped file would itself start a prefetch of it.
	echo 0 >/proc/sys/vm/pbitmap_enabled
	fincore --bytes --noheadings --output RES hidden/reach.so
	echo 1 >/proc/sys/vm/pbitmap_enabled
}
pbitmap plan --clear prog || fail "pbitmap plan --clear prog"
without=$(cached_after_nobody noplan)
pbitmap plan prog libbig.so hidden/reach.so || fail "pbitmap plan with reach.so"
with=$(cached_after_nobody reach)
[ "$(delta pbitmap_plan_skip_mismatch reach.0 reach.1)" = 1 ] ||
	fail "unreachable file: plan_skip_mismatch $(delta pbitmap_plan_skip_mismatch reach.0 reach.1), want 1"
[ "$(delta pbitmap_plan_files reach.0 reach.1)" = 1 ] ||
	fail "unreachable file: plan_files $(delta pbitmap_plan_files reach.0 reach.1), want 1 (libbig.so)"
[ "$with" = "$without" ] ||
	fail "hidden/reach.so: $without bytes cached after nobody's start without a plan, $with with the plan"
echo "ok: a file nobody cannot reach is skipped (denied); the plan reads none of it"

# A set-uid exec: no plan read.
cp --preserve=xattr prog prog-suid
chmod 4755 prog-suid
sync
echo 3 >/proc/sys/vm/drop_caches
snap suid.0
"${NOBODY[@]}" ./prog-suid "$W/mod.so" >suid.out || fail "the set-uid copy failed"
snap suid.1
cmp -s suid.out want.out || fail "set-uid copy: $(cat suid.out)"
[ "$(delta pbitmap_plan_skip_secure suid.0 suid.1)" = 1 ] ||
	fail "set-uid exec: plan_skip_secure $(delta pbitmap_plan_skip_secure suid.0 suid.1), want 1"
[ "$(delta pbitmap_plan_exec suid.0 suid.1)" = 0 ] ||
	fail "set-uid exec: the plan was run"
echo "ok: a set-uid exec reads no plan"
cold_reset
echo "PASS: t-plan"
