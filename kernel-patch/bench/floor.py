#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""floor.py: the request floor of a run, from its ground truth and FIEMAP.

  floor.py [--prefix DIR] (--device DEV | --max-request-kb K | --physical-kb K)
           [--per-file] TRUTH.json

The request floor is the fewest read requests that could bring in the pages
a run actually used: the disk blocks under those pages (FIEMAP), merged
across files into contiguous runs, each run split at the device's largest
request (max_sectors_kb).  No request could serve two runs without reading
blocks nobody used, so no reading strategy that reads only used blocks does
better; a strategy that reads unused blocks too (readahead, slurp, preload)
can make fewer, larger requests, and its requests / floor may be below 1.

TRUTH.json is ground_truth.py's output: "files": [{"path", "pages":
[[first, last], ...]}, ...] (page indices, inclusive; "page_size").  Paths
are taken relative to DIR with --prefix (the benchmark's chroot).
--device DEV reads /sys/block/DEV/queue/max_sectors_kb.

How pages become blocks: each page's byte range is intersected with the
file's extents.  Unwritten extents and holes need no read.  An extent
flagged DATA_INLINE (the data lives in the inode or its metadata block)
counts as a read of its reported physical range; ENCODED or UNKNOWN extents
(compressed, or not yet allocated: delayed allocation) have no meaningful
physical address and make floor.py fail, rather than guess.

With --physical-kb K, the physical floor instead: ceil(S / K KiB), S the
bytes of the pages the run used (the last page of a file counted up to its
end; pages of a hole counted too, though they need no read), wherever they
lie on disk: the fewest requests of K KiB that could
carry them if they were contiguous (issue 25: K = 256, an EBS operation).
The FIEMAP floor says what the files' layout allows; the physical floor
what a layout made for the start-up would.

Prints the floor as one integer; --per-file first prints one line per file
("PATH: N pages, M disk ranges").  Exit status 0; 1 on error (messages as
"floor: FILE: message"); 2 on usage errors.
"""
import argparse
import array
import fcntl
import json
import os
import struct
import sys

PROG = "floor"
FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 0x1
FIEMAP_EXTENT_LAST = 0x1
FIEMAP_EXTENT_UNKNOWN = 0x2
FIEMAP_EXTENT_DELALLOC = 0x4
FIEMAP_EXTENT_ENCODED = 0x8
FIEMAP_EXTENT_DATA_INLINE = 0x200
FIEMAP_EXTENT_UNWRITTEN = 0x800
FIEMAP_HEADER = struct.Struct("=QQIIII")        # start length flags mapped count reserved
FIEMAP_EXTENT = struct.Struct("=QQQQQIIII")     # logical physical length 2 reserved flags 3 reserved
BATCH = 512


class FloorError(Exception):
    pass


def merge(ranges, gap=0):
    """Sorted, coalesced [start, end) byte ranges: adjacent or overlapping
    ranges become one, and so do ranges at most `gap` bytes apart (the gap
    then read with them)."""
    out = []
    for start, end in sorted(r for r in ranges if r[1] > r[0]):
        if out and start <= out[-1][1] + gap:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [tuple(r) for r in out]


def floor_requests(ranges, max_request):
    """The number of requests of at most max_request bytes that read every
    byte of `ranges` (physical [start, end) ranges, any order, any overlap)
    and no byte outside them."""
    if max_request <= 0:
        raise ValueError("max_request must be positive")
    return sum(-(-(end - start) // max_request) for start, end in merge(ranges))


def extents(fd):
    """The file's extents: (logical, physical, length, flags) tuples."""
    out, start = [], 0
    while True:
        buf = bytearray(FIEMAP_HEADER.size + BATCH * FIEMAP_EXTENT.size)
        FIEMAP_HEADER.pack_into(buf, 0, start, 2**64 - 1 - start, FIEMAP_FLAG_SYNC, 0, BATCH, 0)
        arr = array.array("B", buf)
        fcntl.ioctl(fd, FS_IOC_FIEMAP, arr, True)
        mapped = FIEMAP_HEADER.unpack_from(arr, 0)[3]
        last = False
        for i in range(mapped):
            logical, physical, length, _, _, flags, _, _, _ = FIEMAP_EXTENT.unpack_from(
                arr, FIEMAP_HEADER.size + i * FIEMAP_EXTENT.size)
            out.append((logical, physical, length, flags))
            last = bool(flags & FIEMAP_EXTENT_LAST)
            start = logical + length
        if mapped == 0 or last:
            return out


def physical_ranges(path, pages, page_size):
    """The physical byte ranges under `pages` (inclusive index ranges) of
    the file at `path`."""
    wanted = merge((first * page_size, (last + 1) * page_size) for first, last in pages)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise FloorError(f"{path}: {e.strerror}") from e
    try:
        size = os.fstat(fd).st_size
        try:
            exts = extents(fd)
        except OSError as e:
            raise FloorError(f"{path}: FIEMAP: {e.strerror}") from e
    finally:
        os.close(fd)
    out = []
    for logical, physical, length, flags in exts:
        if flags & FIEMAP_EXTENT_UNWRITTEN:
            continue                    # reads as zeroes: no I/O
        for start, end in wanted:
            lo, hi = max(start, logical), min(end, logical + length, size)
            if lo >= hi:
                continue
            if flags & (FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC) \
                    and not flags & FIEMAP_EXTENT_DATA_INLINE:
                raise FloorError(f"{path}: extent at offset {logical} has no physical "
                                 f"address (FIEMAP flags {flags:#x})")
            if flags & FIEMAP_EXTENT_DATA_INLINE:
                out.append((physical, physical + length))
            else:
                out.append((physical + lo - logical, physical + hi - logical))
    return out


def used_bytes(path, pages, page_size):
    """The bytes of `pages` (inclusive index ranges) in the file at `path`,
    none past its end."""
    try:
        size = os.stat(path).st_size
    except OSError as e:
        raise FloorError(f"{path}: {e.strerror}") from e
    return sum(max(0, min(end, size) - start) for start, end in
               merge((first * page_size, (last + 1) * page_size) for first, last in pages))


def physical_floor(nbytes, request):
    """ceil(nbytes / request): requests of `request` bytes carrying nbytes."""
    if request <= 0:
        raise ValueError("request must be positive")
    return -(-nbytes // request)


def max_request_of(device):
    path = f"/sys/block/{device}/queue/max_sectors_kb"
    try:
        with open(path) as f:
            return int(f.read()) * 1024
    except (OSError, ValueError) as e:
        raise FloorError(f"{path}: {getattr(e, 'strerror', None) or e}") from e


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[1].replace("\n", " "))
    ap.add_argument("truth", help="ground_truth.py's JSON")
    ap.add_argument("--prefix", default="", help="directory the JSON's paths are relative to")
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--device", help="block device whose max_sectors_kb bounds a request")
    how.add_argument("--max-request-kb", type=int, help="largest request, KiB")
    how.add_argument("--physical-kb", type=int,
                     help="the physical floor: ceil(used bytes / this many KiB)")
    ap.add_argument("--per-file", action="store_true", help="one line per file first")
    args = ap.parse_args(argv)
    if args.max_request_kb is not None and args.max_request_kb <= 0:
        ap.error("--max-request-kb must be positive")
    if args.physical_kb is not None and args.physical_kb <= 0:
        ap.error("--physical-kb must be positive")
    try:
        try:
            with open(args.truth) as f:
                truth = json.load(f)
            page_size = int(truth["page_size"])
            files = [(f["path"], f["pages"]) for f in truth["files"]]
        except OSError as e:
            raise FloorError(f"{args.truth}: {e.strerror}") from e
        except (ValueError, KeyError, TypeError) as e:
            raise FloorError(f"{args.truth}: not a ground-truth file ({e})") from e
        if args.physical_kb is not None:
            total = 0
            for path, pages in files:
                n = used_bytes(args.prefix + path, pages, page_size)
                total += n
                if args.per_file:
                    print(f"{path}: {n} bytes used")
            print(physical_floor(total, args.physical_kb * 1024))
            return 0
        max_request = (args.max_request_kb * 1024 if args.max_request_kb is not None
                       else max_request_of(args.device))
        everything = []
        for path, pages in files:
            ranges = physical_ranges(args.prefix + path, pages, page_size)
            everything += ranges
            if args.per_file:
                npages = sum(last - first + 1 for first, last in pages)
                print(f"{path}: {npages} pages, {len(merge(ranges))} disk ranges")
        print(floor_requests(everything, max_request))
    except FloorError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
