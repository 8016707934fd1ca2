#!/usr/bin/env python3
"""Make malformed variants of a stamped ELF file, for the kernel's record checks.

  craft.py STAMPED OUTDIR     writes OUTDIR/NAME for every case below and prints
                              "NAME REASON" lines, REASON being the pbitmap_reject
                              reason the kernel should report (pbitmap_reject tracepoint)

STAMPED must carry a .pbitmap section (pbitmap add) with at least one marked page.
Every variant keeps the program's own bytes: only the record, the section header of
.pbitmap, or the user.pbitmap marker (struct pbitmap_marker) change, so each must
still run and print what the original prints, while the kernel rejects its record.
The kernel finds the record through the marker alone, so every variant gets a marker
that describes its (crafted) section, then the marker cases break the marker itself.
The section holds the record in two slots (uapi/linux/pbitmap.h) and the kernel takes
either valid one, so every record edit is made to both.  Record edits other than the
checksum case recompute the CRC, and marker edits other than marker-checksum recompute
the marker's, so that each case reaches the check it is meant for.  Self-contained on purpose: it does not share code with the tool.
"""
import os
import struct
import sys
import zlib

SHT_PROGBITS = 1
MARKER = struct.Struct("<IIQQII")
MARKER_MAGIC = 0x4D454250
HDR = struct.Struct("<IHHIIQQIBBBBQQQIHHQQ40s")
NAMES = ("magic version header_size checksum flags nr_pages content_size plane_size "
         "page_shift nr_planes threshold newest_plane runs last_update orig_shoff "
         "orig_shnum orig_shstrndx reserved0 record_offset tail_size reserved").split()


class Image:
    """The stamped file, its .pbitmap section header and its record."""

    def __init__(self, data):
        if data[:4] != b"\x7fELF" or data[5] != 1:
            sys.exit("craft.py: not a little-endian ELF file")
        self.data = bytearray(data)
        self.cls = data[4]
        if self.cls == 2:
            self.shoff_at, self.shoff_fmt = 40, "<Q"
            self.shentsize_at, self.shnum_at = 58, 60
            self.sh = struct.Struct("<IIQQQQIIQQ")
        else:
            self.shoff_at, self.shoff_fmt = 32, "<I"
            self.shentsize_at, self.shnum_at = 46, 48
            self.sh = struct.Struct("<IIIIIIIIII")
        shoff = struct.unpack_from(self.shoff_fmt, data, self.shoff_at)[0]
        shnum = struct.unpack_from("<H", data, self.shnum_at)[0]
        for i in range(shnum):
            at = shoff + i * self.sh.size
            # pbitmap add appends .pbitmap as the last section, SHT_PROGBITS.
            if i == shnum - 1 and self.sh.unpack_from(data, at)[1] == SHT_PROGBITS:
                self.shdr_at = at
                break
        else:
            sys.exit("craft.py: no .pbitmap section (stamp it with pbitmap add)")
        fields = self.sh.unpack_from(data, self.shdr_at)
        self.rec_off, self.sec_size = fields[4], fields[5]
        # Slots of r bytes round_up(r, 512) apart: r follows from the section size.
        k = (self.sec_size + 1023) // 1024
        self.rec_size = self.sec_size - k * 512
        self.slots = [self.rec_off, self.rec_off + k * 512]
        self.marker_edit = None
        self.marker_len = MARKER.size

    def marker(self):
        """The user.pbitmap value: the marker of the section as it now is."""
        fields = self.sh.unpack_from(self.data, self.shdr_at)
        m = dict(magic=MARKER_MAGIC, record_size=fields[5] & 0xFFFFFFFF,
                 record_offset=fields[4], file_size=len(self.data), checksum=0, reserved=0)
        if self.marker_edit:
            self.marker_edit(m)
        keys = ("magic", "record_size", "record_offset", "file_size", "checksum", "reserved")
        if m["checksum"] == 0:
            m["checksum"] = zlib.crc32(MARKER.pack(*(m[k] for k in keys)))
        else:
            m["checksum"] = 0
        value = MARKER.pack(*(m[k] for k in keys))
        return value[:self.marker_len]

    def header(self):
        return dict(zip(NAMES, HDR.unpack_from(self.data, self.rec_off)))

    def set_header(self, h, reseal=True):
        for at in self.slots:
            HDR.pack_into(self.data, at, *(h[n] for n in NAMES))
        if reseal:
            self.reseal()

    def reseal(self):
        for at in self.slots:
            rec = bytearray(self.data[at:at + self.rec_size])
            rec[8:12] = b"\0\0\0\0"
            struct.pack_into("<I", self.data, at + 8, zlib.crc32(bytes(rec)))

    def set_section(self, offset=None, size=None):
        f = list(self.sh.unpack_from(self.data, self.shdr_at))
        if offset is not None:
            f[4] = offset
        if size is not None:
            f[5] = size
        self.sh.pack_into(self.data, self.shdr_at, *f)

    def set_ehdr(self, shoff=None, shentsize=None, shnum=None):
        if shoff is not None:
            struct.pack_into(self.shoff_fmt, self.data, self.shoff_at, shoff)
        if shentsize is not None:
            struct.pack_into("<H", self.data, self.shentsize_at, shentsize)
        if shnum is not None:
            struct.pack_into("<H", self.data, self.shnum_at, shnum)


def header_case(**changes):
    def apply(img):
        h = img.header()
        h.update(changes)
        img.set_header(h)
    return apply


def field_case(fn):
    def apply(img):
        h = img.header()
        fn(h)
        img.set_header(h)
    return apply


def bad_checksum(img):
    for at in img.slots:
        img.data[at + HDR.size] ^= 0x01


def bits_past_end(img):
    h = img.header()
    if h["nr_pages"] % 64 == 0:
        sys.exit("craft.py: no spare bits past the last page in this file")
    for at in img.slots:
        img.data[at + HDR.size + h["plane_size"] - 1] |= 0x80
    img.reseal()


def too_large(img):
    # A section larger than the kernel reads (two 4 MiB slots), inside the file.
    size = (8 << 20) + 4096
    img.data.extend(b"\0" * size)
    img.set_section(size=size)


def marker_case(**changes):
    """Break the marker; checksum=1 asks for a wrong marker CRC."""
    def apply(img):
        img.marker_edit = lambda m: m.update(
            {k: (v(m) if callable(v) else v) for k, v in changes.items()})
    return apply


def short_marker(img):
    img.marker_len = MARKER.size - 1


def section(**kw):
    return lambda img: img.set_section(**kw)


MAX64 = (1 << 64) - 1
CASES = [
    # name, edit, expected reason
    ("magic", header_case(magic=0x12345678), "header"),
    ("version-1", header_case(version=1), "header"),
    ("version-4", header_case(version=4), "header"),
    ("version-3-plan-past-record", header_case(version=3, reserved=b"\x08" + bytes(39)), "header"),
    ("two-policies", header_case(flags=(1 << 0) | (1 << 2)), "header"),
    ("header-size", header_case(header_size=64), "header"),
    ("unknown-flag", header_case(flags=1 << 7), "header"),
    ("xattr-flag", header_case(flags=2), "header"),
    ("shift-small", header_case(page_shift=11), "header"),
    ("shift-large", header_case(page_shift=31), "header"),
    ("no-planes", header_case(nr_planes=0), "header"),
    ("many-planes", header_case(nr_planes=17), "header"),
    ("threshold-zero", header_case(threshold=0), "header"),
    ("threshold-high", field_case(lambda h: h.update(threshold=h["nr_planes"] + 1)), "header"),
    ("newest-out", field_case(lambda h: h.update(newest_plane=h["nr_planes"])), "header"),
    ("reserved", header_case(reserved=b"\1" + b"\0" * 39), "header"),
    ("zero-pages", header_case(nr_pages=0, content_size=0), "header"),
    ("pages-mismatch", field_case(lambda h: h.update(nr_pages=h["nr_pages"] + 1)), "header"),
    ("huge-count", header_case(nr_pages=MAX64), "header"),
    ("content-past-record", field_case(lambda h: h.update(content_size=h["record_offset"] + 4096)), "header"),
    ("tail-size", field_case(lambda h: h.update(tail_size=h["tail_size"] + 4096)), "bounds"),
    ("record-offset-field", field_case(lambda h: h.update(record_offset=h["record_offset"] + 4096)), "bounds"),
    ("plane-size", field_case(lambda h: h.update(plane_size=h["plane_size"] + 8)), "header"),
    ("bits-past-end", bits_past_end, "header"),
    ("checksum", bad_checksum, "checksum"),
    ("offset-beyond-eof", lambda img: img.set_section(offset=len(img.data) + 4096), "marker"),
    ("offset-overflow", section(offset=MAX64 & ~4095), "marker"),
    ("offset-misaligned", lambda img: img.set_section(offset=img.rec_off + 8), "marker"),
    ("offset-in-text", section(offset=4096), "header"),
    ("size-past-eof", lambda img: img.set_section(size=len(img.data)), "marker"),
    ("size-tiny", section(size=16), "marker"),
    ("size-too-large", too_large, "size"),
    ("marker-magic", marker_case(magic=0x12345678), "xattr"),
    ("marker-checksum", marker_case(checksum=1), "marker"),
    ("marker-reserved", marker_case(reserved=1), "marker"),
    ("marker-stale-size", marker_case(file_size=lambda m: m["file_size"] + 4096), "marker"),
    ("marker-short", short_marker, "marker"),
    ("marker-record-size", marker_case(record_size=lambda m: m["record_size"] + 8), "header"),
]


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    src, outdir = argv[1], argv[2]
    original = open(src, "rb").read()
    os.makedirs(outdir, exist_ok=True)
    for name, edit, reason in CASES:
        img = Image(original)
        if img.cls == 1 and name == "offset-overflow":
            img.set_section(offset=0xFFFFF000)
        else:
            edit(img)
        path = os.path.join(outdir, name)
        with open(path, "wb") as f:
            f.write(img.data)
        os.chmod(path, 0o755)
        os.setxattr(path, "user.pbitmap", img.marker())
        print(name, reason)


if __name__ == "__main__":
    main(sys.argv)
