#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Sum a bench run's new read requests by what made them (RQ_STACK=1).

Each file of rq-trace/ (bench-run.sh RQ_TRACE=1 RQ_STACK=1) holds one timed
run's block:block_getrq events on the bench disk, each followed by the
kernel stack of the task that made the request, as tracefs prints them.
waits.stp charges a request to the system call its task was in; one
system call (exec above all) makes requests for several reasons, and the
stack tells them apart.  Each request gets the first of these causes that
its stack shows:

  plan: metadata table   pbitmap_plan_meta_read(): the table's batch
  plan: look-ups         a look-up inside pbitmap_plan_run()
  plan: pages            the rest of pbitmap_plan_run(): its files' pages
  record                 pbitmap_read_file(): a record read
  exec: interpreter look-up  open_exec() from load_elf_binary()
  exec: executable look-up   do_open_execat() otherwise
  CALL: look-up          a path look-up (__lookup_slow, lookup_open or a
                         filesystem's ->lookup) in system call CALL
  CALL: fault, read, prefetch, other
                         filemap_fault(), filemap_read(), pbitmap_prefetch(),
                         anything else, in CALL

CALL is the system call (__x64_sys_NAME, __do_sys_NAME), "page fault" for
a fault from user space, "worker" for a kworker, "?" when the stack shows
none of these.

  rq-stacks.py FILE...

Prints, per file, "FILE: N requests" and a line per cause, the most
requests first.  Exit status 0; 1 on error (messages as
"rq-stacks: FILE: message").
"""
import collections
import re
import sys

PROG = "rq-stacks"
FRAME = re.compile(r'^\s*=> (\S+)')
SYSCALL = re.compile(r'^(?:__x64_sys_|__do_sys_|__ia32_sys_)(\w+)$')
# A path look-up's frames: the VFS's (often inlined into path_openat) or
# a filesystem's ->lookup, which the look-up's directory and inode reads
# are made under.
LOOKUP = re.compile(r'^(__lookup_slow|lookup_open|ext4_lookup|xfs_vn_lookup|btrfs_lookup|ext2_lookup)$')


def parse(path):
    """The stacks of the file's block_getrq events, innermost frame first.

    A stack belongs to the event just before it.  A stack after anything
    else is another disk's request: runs traced before the trigger took
    the event's filter got a stack for every disk's (tracefs runs a
    trigger without its own filter on events the event filter drops).
    """
    stacks, cur, pending = [], None, False   # pending: an event awaits its stack
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            frame = FRAME.match(line)
            if frame:
                if cur is not None:
                    cur.append(frame[1])
                continue
            if pending and "<stack trace>" not in line and line.strip() and not line.startswith("#"):
                raise ValueError(f"block_getrq event {len(stacks) + 1} has no stack "
                                 "(made without RQ_STACK=1?)")
            cur = [] if pending and "<stack trace>" in line else None
            if cur is not None:
                stacks.append(cur)
            pending = "block_getrq:" in line
    if pending:
        raise ValueError(f"block_getrq event {len(stacks) + 1} has no stack (made without RQ_STACK=1?)")
    return stacks


def call_of(stack):
    for f in reversed(stack):
        m = SYSCALL.match(f)
        if m:
            return m[1]
        if f in ("exc_page_fault", "asm_exc_page_fault"):
            return "page fault"
        if f == "worker_thread":
            return "worker"
    return "?"


def cause(stack):
    has = set(stack).__contains__
    lookup = any(LOOKUP.match(f) for f in stack)
    if has("pbitmap_plan_meta_read"):
        return "plan: metadata table"
    if has("pbitmap_plan_run"):
        return "plan: look-ups" if lookup else "plan: pages"
    if has("pbitmap_read_file"):
        return "record"
    if lookup and has("open_exec") and has("load_elf_binary"):
        return "exec: interpreter look-up"
    if lookup and has("do_open_execat"):
        return "exec: executable look-up"
    what = ("look-up" if lookup else "fault" if has("filemap_fault") else
            "read" if has("filemap_read") else "prefetch" if has("pbitmap_prefetch") else "other")
    return f"{call_of(stack)}: {what}"


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    for path in argv:
        try:
            stacks = parse(path)
        except (OSError, ValueError) as e:
            print(f"{PROG}: {path}: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
            return 1
        counts = collections.Counter(cause(s) for s in stacks)
        print(f"{path}: {len(stacks)} requests")
        for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:5d}  {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
