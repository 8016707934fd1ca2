#!/bin/bash
# t-rq-by-task: kernel-patch/bench/rq-by-task.py, a run's block events
# (bench-run.sh RQ_TRACE=1) summed by process.
#   - two processes of one name (pbitmapd's exec child and data child) are
#     two lines, each with its requests, bios, MiB and first and last bio
#     (seconds from the run's first event), the most requests first, then
#     by name; a
#     request issued by a process that queued no bio still counts;
#   - tracefs's header lines and other events are not events;
#   - a file with no events says so;
#   - bad input: a block event without its sectors, a missing file (exit 1,
#     "rq-by-task: FILE: ...").

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
RQ=$BENCH_DIR/rq-by-task.py
cd "$WORK" || fail "cd $WORK"

cat >run <<'T'
# tracer: nop
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
        pbitmapd-536     [001] .....    90.500000: block_bio_queue: 254,16 RA 12800 + 2048 [pbitmapd]
        pbitmapd-536     [001] .....    90.500010: block_rq_issue: 254,16 RA 1048576 () 12800 + 2048 be,0,4 [pbitmapd]
      packlookup-541     [000] .....    90.600000: block_bio_queue: 254,16 RM 1679304 + 8 [chroot]
      packlookup-541     [000] .....    90.600020: block_rq_issue: 254,16 RM 4096 () 1679304 + 8 be,0,4 [chroot]
        pbitmapd-542     [001] .....    90.700000: block_bio_queue: 254,16 RA 20000 + 256 [pbitmapd]
        pbitmapd-542     [001] .....    90.750000: block_bio_queue: 254,16 RA 30000 + 256 [pbitmapd]
        pbitmapd-542     [001] .....    90.750010: block_rq_issue: 254,16 RA 131072 () 20000 + 256 be,0,4 [pbitmapd]
        pbitmapd-542     [001] .....    90.750020: block_rq_issue: 254,16 RA 131072 () 30000 + 256 be,0,4 [pbitmapd]
   kworker/u8:1-42      [000] .....    90.800000: block_rq_issue: 254,16 RA 4096 () 40000 + 8 be,0,4 [kworker/u8:1]
        pbitmapd-542     [001] .....    90.800000: sched_switch: prev_comm=pbitmapd
T
out=$("$PYTHON" "$RQ" run) || fail "rq-by-task.py failed on a good trace"
want="run: 5 requests issued, 4 bios
  pbitmapd-542             requests    2  bios     2     0.25 MiB  0.200-0.250 s
  kworker/u8:1-42          requests    1  bios     0     0.00 MiB  -
  packlookup-541           requests    1  bios     1     0.00 MiB  0.100-0.100 s
  pbitmapd-536             requests    1  bios     1     1.00 MiB  0.000-0.000 s"
[ "$out" = "$want" ] || fail "summary: want
$want
got
$out"

grep '^#' run >empty
out=$("$PYTHON" "$RQ" empty) || fail "rq-by-task.py failed on a trace without events"
[ "$out" = "empty: no events" ] || fail "no events: got '$out'"

echo '        pbitmapd-536     [001] .....    90.5: block_bio_queue: 254,16 RA [pbitmapd]' >bad
for f in bad absent; do
	"$PYTHON" "$RQ" "$f" >out 2>err && fail "$f: exit 0"
	grep -q "^rq-by-task: $f: " err || fail "$f: no 'rq-by-task: $f:' error: $(cat err)"
done
echo "PASS: rq-by-task: processes apart, headers and other events ignored, no events, bad input"
