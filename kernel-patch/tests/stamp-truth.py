#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""stamp-truth.py: mark in stamped files exactly the pages a command faulted.

  stamp-truth.py GROUND_TRUTH.json FILE...

GROUND_TRUTH.json is the output of ground_truth.py (tests/lib/, copied beside
the guest tests by make vm-check): the pages of each file a command really
faulted in, with readahead and fault-around off.  Each FILE must already
carry a bitmap (pbitmap add) and appear in the JSON; its bitmap is cleared
and then exactly those pages are set in every generation, with
`pbitmap set --ranges` (byte ranges, so a data file's coarser granule gets
every granule a faulted page touches).  Pages past the stamped content (an
ELF file's appended tail) are left out.  Prints one line per file: path,
pages faulted, granules now in the prefetch set.

The bitmaps the kernel tests prefetch from are thus the program's real
page set, not what `pbitmap record` learned (which depends on fault-around
and on the test bed's lack of seccomp, see kernel-patch/README.md).
"""
import json
import os
import subprocess
import sys


def show(paths):
    """Each path's record, by path: one pbitmap run for them all (a process
    costs a TCG guest tens of milliseconds, and gdb has 57 libraries)."""
    out = subprocess.run(["pbitmap", "show", "--json"] + paths, check=True,
                         capture_output=True, text=True).stdout
    records = json.loads(out)
    if [r["file"] for r in records] != paths:
        sys.exit("stamp-truth: pbitmap show --json did not list %s" % " ".join(paths))
    return dict(zip(paths, records))


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    truth = json.load(open(argv[1]))
    if truth["exit_status"]:
        sys.exit("stamp-truth: the measured command exited with status %d"
                 % truth["exit_status"])
    by_path = {f["path"]: f for f in truth["files"]}
    page = truth["page_size"]
    paths = argv[2:]
    entries = {}
    for path in paths:
        entry = by_path.get(os.path.realpath(path))
        if entry is None:
            sys.exit("stamp-truth: %s: not in %s" % (path, argv[1]))
        if entry["cached_before"]:
            sys.exit("stamp-truth: %s: %d pages were cached before the command ran"
                     % (path, entry["cached_before"]))
        if not entry["count"]:
            sys.exit("stamp-truth: %s: the command faulted no page of it" % path)
        entries[path] = entry
    before = show(paths)
    for path in paths:
        content = before[path]["content_size"]
        ranges = ["%d+%d" % (first * page, (last - first + 1) * page)
                  for first, last in entries[path]["pages"] if first * page < content]
        # Each change of an ELF file writes a new copy of it: only when needed.
        if before[path]["prefetch"]["pages"]:
            subprocess.run(["pbitmap", "clear", "-q", "--all", path], check=True)
        subprocess.run(["pbitmap", "set", "-q", "--ranges", ",".join(ranges), path], check=True)
    after = show(paths)
    for path in paths:
        if not after[path]["prefetch"]["pages"]:
            sys.exit("stamp-truth: %s: nothing marked after pbitmap set" % path)
        print("%s: %d pages faulted, %d granules of %d bytes marked" % (
            path, entries[path]["count"], after[path]["prefetch"]["pages"],
            after[path]["page_size"]))


if __name__ == "__main__":
    main(sys.argv)
