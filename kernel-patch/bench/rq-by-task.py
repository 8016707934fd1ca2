#!/usr/bin/env python3
"""Sum a bench run's block events by process (bench-run.sh RQ_TRACE=1).

Each file of rq-trace/ holds one timed run's block:block_bio_queue and
block:block_rq_issue events on the bench disk, as tracefs prints them.  A
bio is queued in the context of the process that reads (a fault, read(2),
readahead(2), WILLNEED); a request is issued where the plug is flushed or
the queue run, usually the same process.  Processes are told apart by
name and pid (tracefs's line prefix), so that two of pbitmapd's children
reading one file at once show as two.  For each run: the requests issued
and the bios queued by each process, their bytes, and when its first and
last bio went out (seconds from the run's first event).

  rq-by-task.py FILE...
"""
import argparse
import collections
import re
import sys

# "  comm-123  [001] d..1.  12.345678: block_bio_queue: 254,16 R 2048 + 256 [comm]"
LINE = re.compile(r'^\s*(?P<task>.+?)-(?P<pid>\d+)\s+\[\d+\]\s+\S+\s+(?P<ts>\d+\.\d+):\s+'
                  r'(?P<event>block_bio_queue|block_rq_issue):\s+(?P<rest>.*)$')
SECTORS = re.compile(r'(\d+) \+ (\d+)')


def parse(path):
    events = []
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            s = SECTORS.search(m['rest'])
            if not s:
                raise SystemExit(f'rq-by-task: {path}: cannot read the event: {line.strip()}')
            events.append((float(m['ts']), m['event'], f"{m['task'].strip()}-{m['pid']}",
                           int(s[1]), int(s[2])))
    return events


def summary(path):
    events = parse(path)
    if not events:
        return f'{path}: no events\n'
    t0 = events[0][0]
    bios = collections.defaultdict(lambda: [0, 0, None, None])
    rqs = collections.Counter()
    for ts, event, proc, _sector, nr in events:
        if event == 'block_rq_issue':
            rqs[proc] += 1
            continue
        b = bios[proc]
        b[0] += 1
        b[1] += nr * 512
        b[2] = ts - t0 if b[2] is None else b[2]
        b[3] = ts - t0
    out = [f'{path}: {sum(rqs.values())} requests issued, '
           f'{sum(b[0] for b in bios.values())} bios']
    for proc in sorted(set(bios) | set(rqs), key=lambda c: (-rqs[c], c)):
        b = bios.get(proc, [0, 0, None, None])
        span = f'{b[2]:.3f}-{b[3]:.3f} s' if b[2] is not None else '-'
        out.append(f'  {proc:24} requests {rqs[proc]:4}  bios {b[0]:5}  '
                   f'{b[1] / 1048576:7.2f} MiB  {span}')
    return '\n'.join(out) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('files', nargs='+', metavar='FILE')
    args = ap.parse_args()
    for path in args.files:
        try:
            sys.stdout.write(summary(path))
        except OSError as e:
            raise SystemExit(f'rq-by-task: {path}: {e.strerror}')


if __name__ == '__main__':
    main()
