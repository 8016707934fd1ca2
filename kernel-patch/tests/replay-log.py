#!/usr/bin/env python3
"""Replay a dm-log-writes log write by write, checking stamped files at every point.

  replay-log.py --log LOG --base BASE --work WORK --file NAME:SECTION_OFF:SECTION_SIZE:BLOCKS
                [--file ...] [--block-size B] [--fsck]

LOG is the log device of a dm-log-writes target (drivers/md/dm-log-writes.c: a
struct log_write_super in sector 0, then for each entry one sector holding a
struct log_write_entry, then the nr_sectors sectors it wrote; a discard or a mark
has no data sectors).  BASE is the data device as it was when logging began; WORK
is overwritten with BASE and then receives the logged writes one by one.

Each --file names a stamped ELF file on that filesystem: the file offset and size
of its .pbitmap section (both record slots) and its data blocks in file order
(comma-separated block numbers of --block-size bytes, from debugfs "blocks").

The checks, after every logged write (and, for a write that covers a section and
is longer than one sector, after each sector of it too, as a crash tearing the
write at a sector boundary would leave the disk):
  - every file's section holds a valid current slot (magic, version 2, CRC-32,
    geometry) and its runs never go back: the old generation or the new one;
  - every byte of every file outside its section is as in BASE;
  - with --fsck, after every logged write: a copy of WORK, its journal replayed
    (e2fsck -E journal_only), passes e2fsck -fn.
Prints one line per failure and a summary; exits 1 on any failure, 2 on bad input.
Self-contained on purpose: it shares no code with the tool or the kernel.
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SUPER = struct.Struct("<QQQI")
ENTRY = struct.Struct("<QQQQ")
MAGIC = 0x6A736677736872
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16
HDR = struct.Struct("<IHHIIQQIBBBBQQQIHHQQ40s")
PBITMAP_MAGIC = 0x504D4250


def entries(log):
    """(index, sector, nr_sectors, flags, data bytes or None, mark) of every entry."""
    with open(log, "rb") as f:
        magic, version, nr, sectorsize = SUPER.unpack(f.read(SUPER.size))
        if magic != MAGIC or version != 1:
            sys.exit("replay-log.py: %s is not a dm-log-writes log" % log)
        pos = sectorsize
        for i in range(nr):
            f.seek(pos)
            head = f.read(sectorsize)
            sector, nr_sectors, flags, data_len = ENTRY.unpack_from(head)
            pos += sectorsize
            mark = None
            data = None
            if flags & MARK:
                mark = head[ENTRY.size:ENTRY.size + data_len].decode(errors="replace")
            elif not flags & DISCARD and nr_sectors:
                f.seek(pos)
                data = f.read(nr_sectors * sectorsize)
                pos += nr_sectors * sectorsize
            yield i, sector, nr_sectors, flags, data, mark, sectorsize


class File:
    def __init__(self, spec, bs):
        name, off, size, blocks = spec.split(":")
        self.name, self.off, self.size, self.bs = name, int(off), int(size), bs
        self.blocks = [int(b) for b in blocks.split(",") if b]
        self.runs = None

    def dev_ranges(self, lo, hi):
        """Device byte ranges of file bytes [lo, hi)."""
        out = []
        while lo < hi:
            blk, within = divmod(lo, self.bs)
            n = min(hi - lo, self.bs - within)
            out.append((self.blocks[blk] * self.bs + within, n))
            lo += n
        return out

    def read(self, img, lo, hi):
        return b"".join(os.pread(img, n, at) for at, n in self.dev_ranges(lo, hi))

    def section_devspan(self):
        return self.dev_ranges(self.off, self.off + self.size)

    def check(self, img, base, where):
        bad = []
        sec = self.read(img, self.off, self.off + self.size)
        k = (self.size + 1023) // 1024
        r = self.size - k * 512
        cur = None
        for at in (0, k * 512):
            rec = sec[at:at + r]
            h = dict(zip(("magic", "version", "hsize", "crc", "flags", "pages", "content",
                          "plane", "shift", "planes", "threshold", "newest", "runs"),
                         HDR.unpack_from(rec)[:13]))
            ok = (h["magic"] == PBITMAP_MAGIC and h["version"] == 2 and h["hsize"] == 128 and
                  r == 128 + h["plane"] * h["planes"] and
                  zlib.crc32(rec[:8] + b"\0\0\0\0" + rec[12:]) == h["crc"])
            if ok and (cur is None or h["runs"] > cur):
                cur = h["runs"]
        if cur is None:
            bad.append("%s: %s: neither record slot is valid" % (where, self.name))
        elif self.runs is not None and cur < self.runs:
            bad.append("%s: %s: the current generation went back from %d runs to %d"
                       % (where, self.name, self.runs, cur))
        else:
            self.runs = cur
        total = len(self.blocks) * self.bs
        for lo, hi in ((0, self.off), (self.off + self.size, total)):
            if hi > lo and self.read(img, lo, hi) != self.read(base, lo, hi):
                bad.append("%s: %s: bytes outside the section changed" % (where, self.name))
        return bad


def fsck(work, scratch):
    shutil.copyfile(work, scratch)
    subprocess.run(["e2fsck", "-fy", "-E", "journal_only", scratch],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = subprocess.run(["e2fsck", "-fn", scratch], capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stdout + r.stderr).strip().splitlines()[-3:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--file", action="append", required=True)
    ap.add_argument("--block-size", type=int, default=4096)
    ap.add_argument("--fsck", action="store_true")
    a = ap.parse_args()
    files = [File(s, a.block_size) for s in a.file]
    shutil.copyfile(a.base, a.work)
    img = os.open(a.work, os.O_RDWR)
    base = os.open(a.base, os.O_RDONLY)
    scratch = tempfile.mkstemp(prefix="replay-fsck.")[1]
    failures, points, torn_points, fscks, writes, marks = [], 0, 0, 0, 0, []
    for f in files:
        failures += f.check(img, base, "before the log")
    for i, sector, nr, flags, data, mark, ss in entries(a.log):
        where = "entry %d" % i
        if mark is not None:
            marks.append(mark)
            continue
        if flags & DISCARD:
            os.pwrite(img, bytes(nr * ss), sector * ss)
        elif data:
            writes += 1
            lo, hi = sector * ss, (sector + nr) * ss
            hits = any(at < hi and at + n > lo for f in files for at, n in f.section_devspan())
            if hits and nr > 1:
                # A crash tearing this write: each prefix of whole sectors.
                for k in range(1, nr):
                    os.pwrite(img, data[(k - 1) * ss:k * ss], lo + (k - 1) * ss)
                    torn_points += 1
                    for f in files:
                        failures += f.check(img, base, "%s, %d of %d sectors" % (where, k, nr))
                os.pwrite(img, data[(nr - 1) * ss:], lo + (nr - 1) * ss)
            else:
                os.pwrite(img, data, lo)
        else:
            continue
        points += 1
        for f in files:
            failures += f.check(img, base, where)
        if a.fsck:
            fscks += 1
            out = fsck(a.work, scratch)
            if out:
                failures.append("%s: e2fsck -fn: %s" % (where, " / ".join(out)))
    os.unlink(scratch)
    for line in failures[:40]:
        print("FAIL:", line)
    print("replay: %d logged writes, %d points checked, %d of them inside torn writes, "
          "%d e2fsck runs, marks %s; final runs %s; %d failures"
          % (writes, points + torn_points, torn_points, fscks, ",".join(marks) or "-",
             " ".join("%s=%s" % (f.name, f.runs) for f in files), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
