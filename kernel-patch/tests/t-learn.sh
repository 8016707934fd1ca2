#!/bin/bash
# Guest test: the kernel learns the start-up page set and writes it back as
# an aged generation (vm.pbitmap_learn, mm/pbitmap/learn.c, writeback.c).
# Every file is a private copy stamped here; vm.pbitmap_learn_interval_s is 0
# and vm.pbitmap_learn_flush writes pending sets when the test says so.
#
#   aging:       learn-pages (learn-pages.c: a 4 MiB array in its own
#                .rodata) stamped -g 4 -t 1.  One run of mode A learns
#                exactly A's 64 array pages (none of B's); after 3 runs of
#                mode B, A is still prefetched; after the 4th it is not.
#   threshold:   stamped -g 4 -t 2: one run of B prefetches nothing of B,
#                two do; one run of A after them adds nothing of A.
#   window:      vm.pbitmap_learn_window_ms=3000; mode W touches A, sleeps
#                8 s, touches B: A is learned, B is not (margins both ways
#                for a busy TCG host: with 1 s and 2.5 s a make check with
#                two loaded guests once saw B learned, the window's end
#                late; A's touches must come within the window).
#   safety:      a learned file keeps its size, mode, owner, mtime, every
#                extended attribute (security.capability included, set
#                here) and every byte outside its record, compared byte
#                for byte; its ctime moves, as any write's does.  A read-only bind mount, an immutable file, a
#                --no-learn file and an unprivileged user's run of a
#                root-owned file under learn=1 are left byte-identical, each
#                counted in pbitmap_learn_skip_<reason>; with learn=2 that
#                user's run is learned.
#   no write access held: while another process holds a flock on the file,
#                the write-back is pending and retried (pbitmap_learn_busy);
#                meanwhile open(O_WRONLY) of the file and an exec of it
#                succeed at once; when the lock goes, the generation is
#                written and the record verifies.
#   torn write:  the slot a learned generation went into, half
#                overwritten (as a crash mid-write leaves it): the other
#                slot, the previous generation, is used by the kernel (no
#                rejection) and the tool; the next generation rewrites the
#                torn slot.
#   data file:   a 16 MiB file (user.pbitmap, zstd) read through a mapping
#                by mmap-index (clustered): the generation learned against
#                ground truth, Jaccard >= 0.9; its bytes and mtime unchanged,
#                its ctime moved (an attribute change; printed); with
#                vm.pbitmap_learn_data_interval_s=3600 the next run is not
#                written (pbitmap_learn_deferred).
#   precision:   a private copy of perl and its libraries (not used by
#                other tests) running a short script (hashes, sort, regex,
#                sprintf, unpack), stamped empty; one cold learning run; the
#                pages learned against ground truth (ground_truth.py,
#                fault-around and readahead off), Jaccard >= 0.9, printed.
#   convergence: two more cold learning runs (pages learned and read
#                requests printed per run); then RUNS (default 3) cold runs
#                each with pbitmap off and on, order rotated: at least 2x
#                fewer read requests on, the output identical every time.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/testbed-lib.sh
. "$HERE/testbed-lib.sh"
cold_begin t-learn
VM=/proc/sys/vm
trap 'learn_reset; cold_reset; tb_cleanup; cd /; rm -rf "$W"' EXIT
cold_need_ground_truth
cold_need_sysctls pbitmap_enabled pbitmap_learn pbitmap_learn_window_ms \
	pbitmap_learn_interval_s pbitmap_learn_data_interval_s pbitmap_learn_flush
cold_need_counters pbitmap_learn_written pbitmap_learn_busy pbitmap_learn_granules \
	pbitmap_learn_skip_readonly pbitmap_learn_skip_immutable \
	pbitmap_learn_skip_no_learn pbitmap_learn_skip_owner pbitmap_reject_checksum \
	pbitmap_learn_deferred
cold_missing


# pages FILE WHICH: the file's pages in the newest generation (WHICH=newest)
# or in the prefetch set (WHICH=prefetch), one per line.
pages() {
	pbitmap show --json "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
sel = r["prefetch"] if sys.argv[1] == "prefetch" else \
      [p for p in r["planes"] if p["age"] == 0][0]
for a, b in sel["ranges"]:
    for n in range(a, b + 1):
        print(n)' "$2" || fail "cannot read the bitmap of $1"
}
# count_in FILE WHICH FIRST N: how many of pages FIRST..FIRST+N-1 are in the set.
count_in() {
	pages "$1" "$2" | awk -v a="$3" -v n="$4" '$1 >= a && $1 < a + n { c++ } END { print c + 0 }'
}

gcc -std=c11 -O2 -Wall -Wextra -Werror -o learn-pages "$HERE/learn-pages.c" ||
	fail "cannot build learn-pages"
echo 1 >$VM/pbitmap_enabled
echo 0 >$VM/pbitmap_learn_interval_s
FIRST=$(./learn-pages 0 | sed -n 's/^first=\([0-9]*\) .*/\1/p')
[ -n "$FIRST" ] || fail "learn-pages did not say where its array is"
A=$FIRST B=$((FIRST + 128))
echo "learn-pages: array at file page $FIRST; A = pages $A-$((A + 63)), B = pages $B-$((B + 63))"

# ---- aging ----
cp learn-pages lp-age && pbitmap add -q -g 4 -t 1 lp-age
echo 1 >$VM/pbitmap_learn
w0=$(vmstat_counter pbitmap_learn_written)
./lp-age A >/dev/null
learn_flush
[ "$(runs_of lp-age)" = 1 ] || fail "aging: after one run of A the record has $(runs_of lp-age) runs, not 1 (written: $(vmstat_delta pbitmap_learn_written "$w0"))"
na=$(count_in lp-age newest "$A" 64)
nb=$(count_in lp-age newest "$B" 64)
narr=$(count_in lp-age newest "$FIRST" 1024)
echo "aging: run of A learned $(pages lp-age newest | wc -l) pages, $na of A's 64, $nb of B's, $narr of the array's 1024"
[ "$na" = 64 ] && [ "$nb" = 0 ] && [ "$narr" = 64 ] ||
	fail "aging: a run of A must learn exactly A's 64 array pages"
for i in 1 2 3 4; do
	./lp-age B >/dev/null
	learn_flush
	pa=$(count_in lp-age prefetch "$A" 64)
	pb=$(count_in lp-age prefetch "$B" 64)
	echo "aging: after $i run(s) of B: $pa of A's pages and $pb of B's in the prefetch set"
	[ "$pb" = 64 ] || fail "aging: B's pages not all prefetched after $i run(s) of B"
	if [ $i -lt 4 ]; then
		[ "$pa" = 64 ] || fail "aging: A aged out after only $i of 4 generations"
	else
		[ "$pa" = 0 ] || fail "aging: A still prefetched after 4 runs of B with 4 generations"
	fi
done

# ---- threshold ----
cp learn-pages lp-thr && pbitmap add -q -g 4 -t 2 lp-thr
./lp-thr B >/dev/null; learn_flush
[ "$(count_in lp-thr prefetch "$B" 64)" = 0 ] || fail "threshold 2: one run of B already prefetches B"
./lp-thr B >/dev/null; learn_flush
[ "$(count_in lp-thr prefetch "$B" 64)" = 64 ] || fail "threshold 2: two runs of B do not prefetch B"
./lp-thr A >/dev/null; learn_flush
pa=$(count_in lp-thr prefetch "$A" 64)
[ "$pa" = 0 ] || fail "threshold 2: one odd run of A added $pa of its pages"
[ "$(runs_of lp-thr)" = 3 ] || fail "threshold 2: $(runs_of lp-thr) runs recorded, not 3"
echo "threshold 2: B prefetched after its 2nd run, one odd run of A added none"

# ---- window ----
cp learn-pages lp-win && pbitmap add -q lp-win
echo 3000 >$VM/pbitmap_learn_window_ms
./lp-win W 8000 >/dev/null
learn_flush
echo 10000 >$VM/pbitmap_learn_window_ms
na=$(count_in lp-win newest "$A" 64)
nb=$(count_in lp-win newest "$B" 64)
echo "window 3 s: A touched before it ends: $na of 64 learned; B touched 8 s after exec: $nb learned"
[ "$na" = 64 ] && [ "$nb" = 0 ] || fail "window: expected A's 64 pages and none of B's"

# ---- safety ----
# snapshot FILE: everything learning must not change, and the bytes outside
# the record (hashed), one line.
snapshot() {
	python3 - "$1" <<'PY'
import hashlib, json, os, subprocess, sys
f = sys.argv[1]
st = os.stat(f)
r = json.loads(subprocess.run(["pbitmap", "show", "--json", f], capture_output=True,
                              text=True, check=True).stdout)[0]
off, size = r["record_offset"], r["section_size"]
data = open(f, "rb").read()
outside = hashlib.sha256(data[:off] + data[off + size:]).hexdigest()
xattrs = sorted((n, os.getxattr(f, n).hex()) for n in os.listxattr(f))
print(st.st_size, oct(st.st_mode), st.st_uid, st.st_gid, st.st_mtime_ns,
      st.st_ino, outside, xattrs)
PY
}
cp learn-pages lp-safe && pbitmap add -q lp-safe
chmod 4755 lp-safe
# A v2 file capability (cap_net_bind_service, permitted and effective).
python3 -c 'import os, struct, sys; os.setxattr(sys.argv[1], "security.capability",
	struct.pack("<5I", 0x02000001, 1 << 10, 0, 0, 0))' lp-safe ||
	fail "cannot set security.capability"
sync
before=$(snapshot lp-safe)
ctime0=$(stat -c %Z.%z lp-safe)
./lp-safe A >/dev/null
learn_flush
[ "$(runs_of lp-safe)" = 1 ] || fail "safety: the run of lp-safe was not learned"
after=$(snapshot lp-safe)
[ "$before" = "$after" ] || fail "safety: learning changed more than the record:
  before: $before
  after:  $after"
pbitmap verify -q lp-safe || fail "safety: the learned record does not verify"
[ "$(stat -c %Z.%z lp-safe)" != "$ctime0" ] || fail "safety: the learned write did not move ctime"
echo "safety: size, mode (4755), owner, mtime, inode, xattrs (security.capability, user.pbitmap) and the bytes outside the record unchanged, ctime moved; record learned and valid"

# skipped CASE COUNTER FILE CMD...: run CMD; FILE must be byte-identical and
# COUNTER must have grown.
skipped() {
	local what=$1 counter=$2 f=$3 c0 sum0
	shift 3
	c0=$(vmstat_counter "$counter")
	sum0=$(sha256sum <"$f")
	"$@" >/dev/null || fail "$what: the run failed"
	learn_flush
	[ "$(sha256sum <"$f")" = "$sum0" ] || fail "$what: the file was written"
	[ "$(vmstat_delta "$counter" "$c0")" -gt 0 ] || fail "$what: $counter did not grow"
	echo "$what: untouched, $counter +$(vmstat_delta "$counter" "$c0")"
}
mkdir rodir && cp learn-pages rodir/lp-ro && pbitmap add -q rodir/lp-ro
ro=$(tb_ro_bind "$W/rodir")
skipped "read-only bind mount" pbitmap_learn_skip_readonly rodir/lp-ro "$ro/lp-ro" A
cp learn-pages lp-imm && pbitmap add -q lp-imm && tb_immutable lp-imm
skipped "immutable file" pbitmap_learn_skip_immutable lp-imm ./lp-imm A
cp learn-pages lp-nl && pbitmap add -q --no-learn lp-nl
skipped "--no-learn file" pbitmap_learn_skip_no_learn lp-nl ./lp-nl A
cp learn-pages lp-root && pbitmap add -q --learn=every lp-root && chmod 755 lp-root "$W"
skipped "nobody's run of a root-owned file, learn=1" pbitmap_learn_skip_owner lp-root \
	setpriv --reuid=65534 --regid=65534 --clear-groups ./lp-root A
echo 2 >$VM/pbitmap_learn
setpriv --reuid=65534 --regid=65534 --clear-groups ./lp-root A >/dev/null
learn_flush
[ "$(runs_of lp-root)" = 1 ] || fail "learn=2: nobody's run of lp-root (--learn=every) was not learned"
echo "learn=2: nobody's run of the root-owned copy stamped --learn=every is learned"
echo 1 >$VM/pbitmap_learn

# ---- no write access held ----
cp learn-pages lp-busy && pbitmap add -q lp-busy
b0=$(vmstat_counter pbitmap_learn_busy)
# -o: the lock stays with flock itself, not with its sleep.
flock -o -s lp-busy sleep 60 &
holder=$!
# Held once an exclusive try-lock fails (a fixed sleep raced flock's own
# start on a loaded TCG guest).
for _ in $(seq 300); do
	flock -n -x lp-busy true || break
	sleep 0.1
done
flock -n -x lp-busy true && fail "flock did not take its lock on lp-busy within 30 s"
./lp-busy A >/dev/null
vmstat_grew pbitmap_learn_busy "$b0" 5 || fail "no write-back attempt met the lock"
# No python3 while the lock is held: the kernel tries once a second, 10
# times, then drops the set (pbitmap_learn_dropped), and a python3 start
# costs a loaded TCG guest seconds of those ten
pbitmap show --json lp-busy | grep -q '"runs":0,' ||
	fail "the kernel wrote while another process held the lock"
dd of=lp-busy conv=notrunc count=0 status=none </dev/null ||
	fail "open(O_WRONLY) failed while a write-back was pending"
./lp-busy 0 >/dev/null || fail "exec failed while a write-back was pending"
pkill -P "$holder" sleep || true
wait "$holder" 2>/dev/null || true
for _ in $(seq 30); do
	[ "$(runs_of lp-busy)" = 1 ] && break
	sleep 0.5
done
[ "$(runs_of lp-busy)" = 1 ] || fail "the pending generation was not written after the lock went" \
	"(the lock met $(vmstat_delta pbitmap_learn_busy "$b0") times, pbitmap_learn_dropped" \
	"$(vmstat_counter pbitmap_learn_dropped))"
pbitmap verify -q lp-busy || fail "the record written after the lock went does not verify"
echo "no write access held: write-back met the lock $(vmstat_delta pbitmap_learn_busy "$b0") time(s); open(O_WRONLY) and exec succeeded meanwhile; written after the lock went"

# ---- torn write ----
# The kernel writes a generation into the slot that is not current.  A
# crash in the middle leaves that slot torn: the other one, the previous
# generation, stays current for the kernel and the tool alike, and the
# next learned write goes into the torn slot again.
cp learn-pages lp-torn && pbitmap add -q lp-torn
./lp-torn A >/dev/null; learn_flush
slot_of() { pbitmap show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["slot"])'; }
[ "$(runs_of lp-torn)" = 1 ] && [ "$(slot_of lp-torn)" = 1 ] ||
	fail "torn write: the first learned generation is not in slot 1 (runs $(runs_of lp-torn), slot $(slot_of lp-torn))"
python3 - lp-torn <<'PY' || fail "cannot tear the record"
import json, os, subprocess, sys
f = sys.argv[1]
r = json.loads(subprocess.run(["pbitmap", "show", "--json", f], capture_output=True,
                              text=True, check=True).stdout)[0]
plane = (r["pages"] + 63) // 64 * 8
off = r["slot_offset"] + 128 + r["newest_plane"] * plane
fd = os.open(f, os.O_RDWR)
half = bytes(b ^ 0x55 for b in os.pread(fd, plane // 2, off))
os.pwrite(fd, half, off)
os.close(fd)
PY
pbitmap verify -q lp-torn || fail "torn slot: pbitmap verify does not accept the other slot"
[ "$(runs_of lp-torn)" = 0 ] && [ "$(slot_of lp-torn)" = 0 ] ||
	fail "torn slot: the previous generation (slot 0, runs 0) is not current"
c0=$(vmstat_counter pbitmap_reject_checksum)
./lp-torn A >/dev/null || fail "torn slot: the program did not run"
[ "$(vmstat_delta pbitmap_reject_checksum "$c0")" = 0 ] || fail "torn slot: the kernel rejected the record instead of using the other slot"
learn_flush
[ "$(runs_of lp-torn)" = 1 ] && [ "$(slot_of lp-torn)" = 1 ] ||
	fail "torn slot: the next learned write did not go into the torn slot"
pbitmap verify -q lp-torn || fail "torn slot: the record written over the torn slot does not verify"
echo "torn write: slot 1 torn; the kernel and the tool use slot 0 (runs 0, no rejection); the next generation rewrote slot 1 (runs 1)"

# ---- data file ----
gcc -std=c11 -O2 -Wall -Wextra -Werror -o mmap-index "$HERE/mmap-index.c" ||
	fail "cannot build mmap-index"
head -c 16M /dev/urandom >data || fail "cannot write the data file"
pbitmap add -q data || fail "cannot stamp the data file"
sync
echo 0 >$VM/pbitmap_enabled
python3 "$HERE/ground_truth.py" --require-cold -o truth-data.json -f "$W/data" -- \
	./mmap-index clustered 42 data >want-data || fail "ground truth of mmap-index"
echo 1 >$VM/pbitmap_enabled
echo 0 >$VM/pbitmap_learn_data_interval_s
sum0=$(sha256sum <data)
read -r m0 c0 < <(python3 -c 'import os, sys; s = os.stat(sys.argv[1]); print(s.st_mtime_ns, s.st_ctime_ns)' data)
./mmap-index clustered 42 data >out-data
cmp -s out-data want-data || fail "data file: output differs from the ground-truth run"
learn_flush
[ "$(runs_of data)" = 1 ] || fail "data file: the mapped reads were not learned (runs $(runs_of data))"
python3 "$HERE/jaccard.py" truth-data.json >jaccard-data || fail "jaccard.py failed: $(cat jaccard-data)"
sed 's/^/  data file /' jaccard-data
j=$(awk '$1 == "overall:" { sub("J=", "", $2); print $2 }' jaccard-data)
python3 -c 'import sys; sys.exit(float(sys.argv[1]) < 0.9)' "$j" ||
	fail "data file: Jaccard $j < 0.9 against ground truth"
read -r m1 c1 < <(python3 -c 'import os, sys; s = os.stat(sys.argv[1]); print(s.st_mtime_ns, s.st_ctime_ns)' data)
[ "$(sha256sum <data)" = "$sum0" ] || fail "data file: its bytes changed"
[ "$m1" = "$m0" ] || fail "data file: mtime changed ($m0 -> $m1)"
[ "$c1" != "$c0" ] || fail "data file: ctime unchanged after an attribute write (is the record really in user.pbitmap?)"
pbitmap verify -q data || fail "data file: the learned record does not verify"
echo "data file: learned (Jaccard $j), bytes and mtime unchanged, ctime moved (attribute change)"
echo 3600 >$VM/pbitmap_learn_data_interval_s
d0=$(vmstat_counter pbitmap_learn_deferred)
./mmap-index clustered 42 data >/dev/null
learn_flush
[ "$(runs_of data)" = 1 ] || fail "data file: written again within vm.pbitmap_learn_data_interval_s"
[ "$(vmstat_delta pbitmap_learn_deferred "$d0")" -gt 0 ] || fail "data file: the deferred write was not counted"
echo "data file: a second run within the 3600 s interval was deferred, not written"
echo 21600 >$VM/pbitmap_learn_data_interval_s

# ---- precision and convergence ----
cold_private_copy "$W/pl" perl
pl_files=("${COLD_COPIED[@]}")
ra_kb=$(cat /sys/block/vda/queue/read_ahead_kb)
big=()
for f in "${pl_files[@]}"; do
	[ "$(stat -c %s "$f")" -gt $((ra_kb * 1024)) ] && big+=("$f")
done
# shellcheck disable=SC2016  # perl's own $ signs
PL=(env LD_LIBRARY_PATH="$W/pl" "${pl_files[0]}" -e 'my %h;
for my $i (1..2000) { $h{sprintf("k%05d", $i)} = $i * 3 }
my @k = sort { $h{$b} <=> $h{$a} } keys %h;
my $s = join(",", grep { /7/ } @k[0..99]);
$s =~ s/k0*(\d+)/<$1>/g;
print length($s), " ", unpack("%32C*", $s), "\n"')
echo 0 >$VM/pbitmap_enabled
echo 0 >$VM/pbitmap_learn
truth_args=()
for f in "${big[@]}"; do truth_args+=(-f "$f"); done
python3 "$HERE/ground_truth.py" --require-cold -o truth.json "${truth_args[@]}" -- "${PL[@]}" >want ||
	fail "ground truth of perl"
python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["exit_status"])' truth.json ||
	fail "perl failed in the ground-truth run: $(head -c 300 want)"
pbitmap add -q "${pl_files[@]}" || fail "cannot stamp the perl copies"
learned() {
	local f n=0
	for f in "${big[@]}"; do n=$((n + $(pages "$f" prefetch | wc -l))); done
	echo $n
}
COLD_WARM=/usr/bin/env
: >"$COLD_RESULTS"
echo 1 >$VM/pbitmap_enabled
echo 1 >$VM/pbitmap_learn
echo "convergence: perl, ${#big[@]} stamped files above the ${ra_kb} KiB readahead window: ${big[*]##*/}"
echo "learning run 0: $(learned) pages in the prefetch set"
for i in 1 2 3; do
	cold_run "learn$i" out "${PL[@]}"
	cmp -s out want || fail "learning run $i: output differs"
	learn_flush
	echo "learning run $i: $(awk -v l="learn$i" '$1 == l { print $3 }' "$COLD_RESULTS") read requests; then $(learned) pages in the prefetch set"
	if [ $i = 1 ]; then
		python3 "$HERE/jaccard.py" truth.json >jaccard || fail "jaccard.py failed: $(cat jaccard)"
		sed 's/^/  precision /' jaccard
		j=$(awk '$1 == "overall:" { sub("J=", "", $2); print $2 }' jaccard)
		python3 -c 'import sys; sys.exit(float(sys.argv[1]) < 0.9)' "$j" ||
			fail "precision: Jaccard $j < 0.9 against ground truth"
	fi
done
echo 0 >$VM/pbitmap_learn
for ((i = 0; i < RUNS; i++)); do
	for c in $(cold_order $i off on); do
		cold_cond "$c"
		cold_run "$c" out "${PL[@]}"
		cmp -s out want || fail "$c run: output differs from the ground-truth run"
	done
done
cold_summary ""
python3 -c 'import sys; sys.exit(int(sys.argv[1]) < 2 * int(sys.argv[2]))' \
	"$med_off_reqs" "$med_on_reqs" ||
	fail "convergence: $med_on_reqs read requests with the learned bitmaps vs $med_off_reqs off: less than 2x"
echo "convergence: $med_off_reqs -> $med_on_reqs read requests ($(python3 -c "print('%.2f' % ($med_off_reqs / $med_on_reqs))")x) after three learning runs"
echo "write-back cost: $(vmstat_counter pbitmap_learn_written) generations written, $(vmstat_counter pbitmap_learn_write_ns) ns in all"
echo PASS
