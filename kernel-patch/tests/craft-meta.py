#!/usr/bin/env python3
"""Give a stamped program's start-up plan a metadata table, sound or malformed.

  craft-meta.py PROGRAM --uuid UUID --range START:NR[:AGE]... [--dev MAJ:MIN]
                [--case CASE]
                              rewrites PROGRAM's plan in place, in both record
                              slots, each resealed: flag PBITMAP_PLAN_F_META, zeros
                              to a multiple of 8 bytes, then the table (struct
                              pbitmap_plan_meta, its ranges), `used` to match; prints
                              "CASE EXPECT" as craft-plan.py does
  craft-meta.py --list        prints "CASE EXPECT" for every case
  craft-meta.py --list-bad    the same for the malformed ones only

EXPECT is what a kernel that knows the table counts at PROGRAM's exec:
reject_header or reject_meta (the plan refused, pbitmap_plan_reject_<reason>),
or ok (the plan accepted; whether its table is read then depends on the
executable and its filesystem, docs/FORMAT.md "Start-up plan").  The tool's
pb_plan_check() refuses the same cases (pbitmap verify), in the same order.

The table is made of --dev (default: PROGRAM's own device, as a plan encodes
it), --uuid (32 hex digits, dashes allowed) and the ranges (START and NR in 4
KiB units of the device, AGE 0 by default; numbers decimal, or hex with 0x),
written as given.  --case (or
--bad) CASE writes the case's variant of it instead: "sound" (the default) the
table as given, the rest below; some replace the ranges with their own, made
from the first range's START.  A boundary case ("ok") is valid.

PROGRAM must carry a plan as `pbitmap plan` writes it (no flags, at least two
files; pbitmap add --plan-size, pbitmap plan), or one this script wrote (its
table is replaced).  The program's bytes and its size stay as they are; its
user.pbitmap marker is written as the section is (craft.py's Image.marker():
the same value, or the one a copy made without extended attributes lost).
nr-over-max and max-ranges need about 8 KiB of the area.
"""
import argparse
import importlib.util
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
_spec = importlib.util.spec_from_file_location("craft_plan", os.path.join(HERE, "craft-plan.py"))
cp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cp)  # its Plan (fields, pack, write) and craft.py's Image

F_META = 2              # PBITMAP_PLAN_F_META
META = struct.Struct("<II16sQ")         # struct pbitmap_plan_meta: dev, nr, uuid, reserved
RANGE = struct.Struct("<QIB3s")         # struct pbitmap_plan_meta_range: start, nr, age
MAX_RANGES = 512        # PBITMAP_PLAN_META_MAX_RANGES
MAX_UNITS = 4096        # PBITMAP_PLAN_META_MAX_UNITS
END = 1 << 40           # PBITMAP_PLAN_META_END
KEEP = 3                # PBITMAP_PLAN_META_KEEP


class Table:
    """A table to write: head fields, ranges (start, nr, age, reserved) and
    the deviations a case makes from a sound one."""

    def __init__(self, dev, uuid, ranges):
        self.dev, self.uuid, self.reserved = dev, uuid, 0
        self.ranges = [(s, n, a, bytes(3)) for s, n, a in ranges]
        self.nr = None          # the head's nr: len(ranges) unless set
        self.pad = 0            # the value of the padding's first byte
        self.used_delta = 0     # added to the right `used`
        self.absent = False     # the flag, but no table at all

    def append(self, raw):
        """@raw, a plan without the flag, with this table after it."""
        if self.pad and len(raw) % 8 == 0:
            # no padding to spoil: one more NUL at the names' end makes 7
            raw += b"\0"
            struct.pack_into("<I", raw, 16, struct.unpack_from("<I", raw, 16)[0] + 1)
        struct.pack_into("<H", raw, 10, struct.unpack_from("<H", raw, 10)[0] | F_META)
        if not self.absent:
            pad = bytearray((-len(raw)) % 8)
            if self.pad:
                pad[0] = self.pad
            raw += pad
            nr = len(self.ranges) if self.nr is None else self.nr
            raw += META.pack(self.dev, nr, self.uuid, self.reserved)
            for r in self.ranges:
                raw += RANGE.pack(*r)
        struct.pack_into("<I", raw, 4, len(raw) + self.used_delta)
        return raw


def edit_range(i, **changes):
    def edit(t):
        s, n, a, r = t.ranges[i]
        f = dict(start=s, nr=n, age=a, reserved=r)
        f.update(changes)
        t.ranges[i] = (f["start"], f["nr"], f["age"], f["reserved"])
    return edit


def ranges(fn):
    """The table's ranges replaced by fn(start of the first), each of age 0."""
    def edit(t):
        t.ranges = [(s, n, 0, bytes(3)) for s, n in fn(t.ranges[0][0])]
    return edit


def setattrs(**changes):
    def edit(t):
        for k, v in changes.items():
            setattr(t, k, v)
    return edit


def count_plus(n):
    def edit(t):
        t.nr = len(t.ranges) + n
    return edit


CASES = [
    ("sound", None, "ok"),
    # The size: `used` is a head field, so a wrong one is a header fault.
    ("used-plus-8", setattrs(used_delta=8), "reject_header"),
    ("used-minus-16", setattrs(used_delta=-16), "reject_header"),
    ("used-no-table", setattrs(absent=True), "reject_header"),
    # one range more than written: `used` too small for the table's nr
    ("nr-plus-1", count_plus(1), "reject_header"),
    # nr such that 16 * nr wraps a 32-bit sum back to the ranges written
    ("nr-wraps", count_plus(1 << 28), "reject_header"),
    # The zeros before the table, its head.
    ("pad-nonzero", setattrs(pad=0x01), "reject_meta"),
    ("meta-reserved", setattrs(reserved=1 << 63), "reject_meta"),
    ("nr-zero", ranges(lambda s: []), "reject_meta"),
    ("nr-over-max", ranges(lambda s: [(s + 2 * i, 1) for i in range(MAX_RANGES + 1)]),
     "reject_meta"),
    ("uuid-zero", setattrs(uuid=bytes(16)), "reject_meta"),
    # A range.
    ("range-empty", edit_range(0, nr=0), "reject_meta"),
    ("range-reserved", edit_range(0, reserved=b"\0\0\x80"), "reject_meta"),
    ("age-over-keep", edit_range(0, age=KEEP + 1), "reject_meta"),
    ("age-max", edit_range(0, age=0xFF), "reject_meta"),
    ("ranges-overlap", ranges(lambda s: [(s, 2), (s + 1, 2)]), "reject_meta"),
    ("ranges-repeated", ranges(lambda s: [(s, 1), (s, 1)]), "reject_meta"),
    ("ranges-descending", ranges(lambda s: [(s + 2, 1), (s, 1)]), "reject_meta"),
    ("end-past", ranges(lambda s: [(END - 1, 2)]), "reject_meta"),
    ("end-wraps", ranges(lambda s: [(2**64 - 1, 2)]), "reject_meta"),
    # All the ranges.
    ("units-over", ranges(lambda s: [(s, MAX_UNITS // 2), (s + MAX_UNITS // 2, MAX_UNITS // 2 + 1)]),
     "reject_meta"),
    # The bounds, met.
    ("adjacent", ranges(lambda s: [(s, 1), (s + 1, 1)]), "ok"),
    ("age-keep", edit_range(0, age=KEEP), "ok"),
    ("end-exact", ranges(lambda s: [(END - 1, 1)]), "ok"),
    ("max-ranges", ranges(lambda s: [(s + 2 * i, 1) for i in range(MAX_RANGES)]), "ok"),
    ("max-units", ranges(lambda s: [(s, MAX_UNITS // 2), (s + MAX_UNITS // 2, MAX_UNITS // 2)]),
     "ok"),
]


def encode_dev(major, minor):
    """As a plan's file entries and the table have it (new_encode_dev())."""
    return (major << 8) | (minor & 0xFF) | ((minor & ~0xFF) << 12)


def number(s):
    """Decimal (leading zeros allowed, as some tools print), or hex with 0x."""
    return int(s, 16) if s.lower().startswith("0x") else int(s, 10)


def parse_dev(s):
    try:
        major, minor = (number(x) for x in s.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError("not MAJ:MIN: %r" % s)
    if not 0 <= major < 4096 or not 0 <= minor < 1 << 20:
        raise argparse.ArgumentTypeError("out of range: %r" % s)
    return encode_dev(major, minor)


def parse_uuid(s):
    try:
        u = bytes.fromhex(s.replace("-", ""))
    except ValueError:
        u = b""
    if len(u) != 16:
        raise argparse.ArgumentTypeError("not 32 hex digits: %r" % s)
    return u


def parse_range(s):
    try:
        f = [number(x) for x in s.split(":")]
    except ValueError:
        f = []
    if len(f) not in (2, 3) or min(f) < 0 or f[0] >= 2**64 or f[1] >= 2**32 or \
       (len(f) == 3 and f[2] > 0xFF):
        raise argparse.ArgumentTypeError("not START:NR[:AGE]: %r" % s)
    return (f[0], f[1], f[2] if len(f) == 3 else 0)


def strip_table(img):
    """A plan this script wrote, back to the one `pbitmap plan` wrote."""
    area = struct.unpack_from("<I", img.data, img.rec_off + 88)[0]
    for slot in img.slots:
        at = slot + img.rec_size - area
        magic, used, nr_files, flags, nr_steps, names_size, _ = cp.PLAN.unpack_from(img.data, at)
        if magic != cp.MAGIC or flags != F_META:
            return
        base = cp.PLAN.size + nr_files * cp.FILE.size + nr_steps * cp.STEP.size + names_size
        if base > used:
            return
        img.data[at + base:at + area] = bytes(area - base)
        struct.pack_into("<IIHH", img.data, at, magic, base, nr_files, 0)
    img.reseal()


def main(argv):
    ap = argparse.ArgumentParser(prog="craft-meta.py", usage=__doc__.split("\n\n")[1])
    ap.add_argument("program", nargs="?")
    ap.add_argument("--dev", type=parse_dev)
    ap.add_argument("--uuid", type=parse_uuid)
    ap.add_argument("--range", dest="ranges", type=parse_range, action="append", default=[])
    ap.add_argument("--case", "--bad", dest="case", default="sound",
                    choices=[c[0] for c in CASES], metavar="CASE")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--list-bad", action="store_true")
    a = ap.parse_args(argv[1:])
    if a.list or a.list_bad:
        for name, _, expect in CASES:
            if a.list or expect != "ok":
                print(name, expect)
        return
    if not a.program or a.uuid is None or not a.ranges:
        ap.error("PROGRAM, --uuid and at least one --range are needed")
    if a.dev is None:
        st = os.stat(a.program)
        a.dev = encode_dev(os.major(st.st_dev), os.minor(st.st_dev))
    _, edit, expect = next(c for c in CASES if c[0] == a.case)
    img = cp.Image(open(a.program, "rb").read())
    strip_table(img)
    p = cp.Plan(img)
    t = Table(a.dev, a.uuid, a.ranges)
    if edit:
        edit(t)
    p.write(t.append(p.pack()))
    with open(a.program, "r+b") as f:
        f.write(img.data)
    # the marker of the section as it is: a copy made without extended
    # attributes (cp without -a) gets it back
    os.setxattr(a.program, "user.pbitmap", img.marker())
    print(a.case, expect)


if __name__ == "__main__":
    main(sys.argv)
