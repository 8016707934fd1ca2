#!/bin/bash
# t-rq-stacks: kernel-patch/bench/rq-stacks.py, a run's new requests
# (bench-run.sh RQ_TRACE=1 RQ_STACK=1) summed by what their kernel stacks
# show made them.
#   - the plan's table, pages and look-ups, a record read, the
#     interpreter's and the executable's look-ups at exec, a look-up in
#     another system call (a filesystem's ->lookup inlined into
#     path_openat), a fault from user space: each its cause, the most
#     requests first, then by name;
#   - a stack after another event (another disk's request, traced before
#     the trigger took the filter) and other events are not requests;
#   - bad input: an event without its stack, a missing file (exit 1,
#     "rq-stacks: FILE: ...").

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
RQS=$BENCH_DIR/rq-stacks.py
cd "$WORK" || fail "cd $WORK"

# stack NAME FRAME...: a block_getrq event of NAME and its stack.
stack() {
	local f
	echo "             $1-614     [000] .....   100.999018: block_getrq: 254,16 RM 1688248 + 8 [$1]"
	echo "             $1-614     [000] .....   100.999046: <stack trace>"
	shift
	for f in trace_event_raw_event_block_bio blk_mq_submit_bio "$@"; do echo " => $f"; done
}
{
	echo '# tracer: nop'
	stack gdb pbitmap_read pbitmap_meta_join pbitmap_plan_meta_read pbitmap_plan_run load_elf_binary __x64_sys_execve
	stack gdb pbitmap_read pbitmap_meta_join pbitmap_plan_meta_read pbitmap_plan_run load_elf_binary __x64_sys_execve
	stack gdb ext4_mpage_readpages read_pages pbitmap_plan_submit pbitmap_plan_run load_elf_binary __x64_sys_execve
	stack gdb ext4_bread __ext4_find_entry ext4_lookup __lookup_slow pbitmap_plan_open_files pbitmap_plan_run __x64_sys_execve
	stack gdb ext4_mpage_readpages pbitmap_read_file pbitmap_lookup elf_load load_elf_binary __x64_sys_execve
	stack gdb ext4_read_bh __ext4_get_inode_loc __ext4_iget ext4_lookup path_openat do_open_execat open_exec load_elf_binary __x64_sys_execve
	stack chroot ext4_read_bh __ext4_find_entry ext4_lookup walk_component path_openat do_open_execat bprm_execve __x64_sys_execve
	stack gdb ext4_read_bh __ext4_find_entry ext4_lookup path_openat do_filp_open do_sys_openat2 __x64_sys_openat
	stack gdb ext4_mpage_readpages filemap_fault __do_fault handle_mm_fault exc_page_fault asm_exc_page_fault
	# another disk's request: a stack after another event
	echo '            time-613     [001] .....   100.932000: block_rq_issue: 254,0 R 4096 () 8 + 8 be,0,4 [time]'
	echo '            time-613     [001] .....   100.932042: <stack trace>'
	echo ' => blk_mq_submit_bio'
	echo ' => __x64_sys_read'
	echo '             gdb-614     [000] .....   101.000000: block_rq_issue: 254,16 RM 4096 () 1688248 + 8 be,0,4 [gdb]'
} >run
out=$("$PYTHON" "$RQS" run) || fail "rq-stacks.py failed on a good trace"
want="run: 9 requests
      2  plan: metadata table
      1  exec: executable look-up
      1  exec: interpreter look-up
      1  openat: look-up
      1  page fault: fault
      1  plan: look-ups
      1  plan: pages
      1  record"
[ "$out" = "$want" ] || fail "summary: want
$want
got
$out"

{ grep -v '=>\|<stack trace>' run | head -3; } >nostack
"$PYTHON" "$RQS" nostack >out 2>err && fail "an event without its stack: exit 0"
grep -q "^rq-stacks: nostack: .*no stack" err || fail "no stack: no 'rq-stacks: nostack:' error: $(cat err)"
"$PYTHON" "$RQS" absent >out 2>err && fail "a missing file: exit 0"
grep -q "^rq-stacks: absent: " err || fail "missing file: no 'rq-stacks: absent:' error: $(cat err)"
echo "PASS: rq-stacks: each cause from its stack, other disks' stacks and events ignored, bad input"
