#!/usr/bin/env python3
"""Make crafted user.pbitmap attributes, for the kernel's checks at mmap.

  craft-xattr.py data FILE OUTDIR   copies FILE (a data file without a bitmap)
                                    to OUTDIR/NAME for every data case and gives
                                    each copy a crafted PBXZ attribute
  craft-xattr.py lib LIB OUTDIR     copies LIB (a shared library stamped with
                                    pbitmap add, at least one page marked) to
                                    OUTDIR/NAME/BASENAME for every library case
                                    and gives each copy a crafted PBEM marker,
                                    some also a crafted record or file tail

Prints "NAME REASON" per case: REASON is the pbitmap_reject_<reason> counter
that must grow by one when a program maps the copy with pbitmap on, or
"accept" for the control cases, whose bitmap must be used.  Every copy is a
new inode, so no verdict cached for another case can answer for it.

The data records are built here from scratch (geometry by the rule of
docs/FORMAT.md, the first pages marked) and framed as zstd frames of raw and
RLE blocks (RFC 8878), so that every field of the frame can be made wrong on
purpose; the controls prove that such frames are acceptable.  Self-contained
on purpose, like craft.py: it shares no code with the tool.

Reasons, as the kernel series names them: xattr (bad PBXZ prefix, zstd frame,
content size; also a value whose magic is neither PBXZ nor PBEM), size (a
record size above PBITMAP_MAX_RECORD_SIZE, or below 128 in a PBXZ prefix),
header and checksum (the record's own checks), marker (a value with the PBEM
magic that is no sound marker for this file: length, CRC, reserved field,
stale file size, a record it places outside the file or unaligned), bounds (a
sound record that does not describe the file: at another offset than the
marker's, covering content past its own offset, i.e. inside what PT_LOAD
maps, content plus tail not the file size, ELF fields in a data record).  The kernel tells the two kinds of value apart by
their magic, as it cannot know a file is ELF before reading it.
"""
import os
import shutil
import struct
import sys
import zlib

HDR = struct.Struct("<IHHIIQQIBBBBQQQIHHQQ40s")
NAMES = ("magic version header_size checksum flags nr_pages content_size plane_size "
         "page_shift nr_planes threshold newest_plane runs last_update orig_shoff "
         "orig_shnum orig_shstrndx reserved0 record_offset tail_size reserved").split()
PBITMAP_MAGIC, PBXZ, PBEM = 0x504D4250, 0x5A584250, 0x4D454250
F_XATTR = 2
MAX_RECORD = 4 << 20
SHT_PROGBITS = 1
MARKER = struct.Struct("<IIQQII")
ZSTD_MAGIC = 0xFD2FB528
BLOCK_MAX = 128 << 10

# ---------------------------------------------------------------- XXH64


def xxh64(data, seed=0):
    """XXH64 of @data (the zstd content checksum is its low 32 bits)."""
    p1, p2, p3, p4, p5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                          0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)
    m = (1 << 64) - 1

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & m

    def rnd(acc, lane):
        return (rotl((acc + lane * p2) & m, 31) * p1) & m

    n, i = len(data), 0
    if n >= 32:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 32 <= n:
            for k in range(4):
                v[k] = rnd(v[k], struct.unpack_from("<Q", data, i + 8 * k)[0])
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
        for k in range(4):
            h = ((h ^ rnd(0, v[k])) * p1 + p4) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, struct.unpack_from("<Q", data, i)[0]), 27) * p1 + p4) & m
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", data, i)[0] * p1 & m), 23) * p2 + p3) & m
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * p5 & m), 11) * p1) & m
        i += 1
    h = ((h ^ (h >> 33)) * p2) & m
    h = ((h ^ (h >> 29)) * p3) & m
    return h ^ (h >> 32)

# ---------------------------------------------------------------- zstd frames


def block(kind, payload, size, last):
    """A block header (RFC 8878 3.1.1.2) and its payload."""
    head = int(last) | kind << 1 | size << 3
    return struct.pack("<I", head)[:3] + payload


def raw_blocks(data):
    out = b""
    for at in range(0, max(len(data), 1), BLOCK_MAX):
        chunk = data[at:at + BLOCK_MAX]
        out += block(0, chunk, len(chunk), at + BLOCK_MAX >= len(data))
    return out


def rle_blocks(total, byte=0):
    """Blocks that regenerate @total bytes from one byte each: a bomb."""
    out, left = b"", total
    while left:
        n = min(left, BLOCK_MAX)
        left -= n
        out += block(1, bytes([byte]), n, left == 0)
    return out


def frame(data=None, fcs="same", window_log=None, checksum=False, blocks=None,
          fhd_extra=0, dict_id=None):
    """One zstd frame.  fcs: "same" (len(data)), None (absent), or a number."""
    blocks = raw_blocks(data) if blocks is None else blocks
    if fcs == "same":
        fcs = len(data)
    fhd, tail = fhd_extra, b""
    if fcs is None:
        window_log = window_log or 17
    if window_log is None:
        fhd |= 1 << 5                       # single segment: window = content
    else:
        tail += bytes([(window_log - 10) << 3])
    if dict_id is not None:
        fhd |= 3
        tail += struct.pack("<I", dict_id)
    if fcs is not None:
        fhd |= 3 << 6 if fcs >= 1 << 32 else 2 << 6
        tail += struct.pack("<Q" if fcs >= 1 << 32 else "<I", fcs)
    if checksum:
        fhd |= 1 << 2
    out = struct.pack("<IB", ZSTD_MAGIC, fhd) + tail + blocks
    if checksum:
        out += struct.pack("<I", checksum if isinstance(checksum, int) and checksum is not True
                           else xxh64(data) & 0xFFFFFFFF)
    return out


def pbxz(record_size, body):
    return struct.pack("<II", PBXZ, record_size) + body

# ---------------------------------------------------------------- records


def record_for(content_size, planes=4, shift=None, marked=(0, 1)):
    """A valid xattr record for @content_size bytes, @marked granules set."""
    if shift is None:
        shift = 12
        while 128 + planes * plane_bytes(content_size, shift) > 2048:
            shift += 1
    nr = (content_size + (1 << shift) - 1) >> shift
    ps = plane_bytes(content_size, shift)
    h = dict.fromkeys(NAMES, 0)
    h.update(magic=PBITMAP_MAGIC, version=2, header_size=128, flags=F_XATTR, nr_pages=nr,
             content_size=content_size, plane_size=ps, page_shift=shift, nr_planes=planes,
             threshold=1, reserved=b"\0" * 40)
    planes_b = bytearray(planes * ps)
    for p in range(planes):
        for g in marked:
            planes_b[p * ps + g // 8] |= 1 << (g % 8)
    return seal(h, planes_b)


def plane_bytes(content_size, shift):
    nr = (content_size + (1 << shift) - 1) >> shift
    return (nr + 63) // 64 * 8


def seal(h, planes_b, crc=None):
    h = dict(h, checksum=0)
    rec = HDR.pack(*(h[n] for n in NAMES)) + bytes(planes_b)
    h["checksum"] = zlib.crc32(rec) if crc is None else crc
    return HDR.pack(*(h[n] for n in NAMES)) + bytes(planes_b)


def edit(rec, reseal=True, **changes):
    h = dict(zip(NAMES, HDR.unpack_from(rec)))
    old = h["checksum"]
    h.update(changes)
    return seal(h, rec[128:], None if reseal else old)


def grown_record(rec, at_least=None):
    """@rec covering one byte more than it does (or @at_least bytes), its
    geometry kept consistent: the record of a file that has since shrunk."""
    h = dict(zip(NAMES, HDR.unpack_from(rec)))
    content = max(h["content_size"] + 1, at_least or 0)
    nr = (content + (1 << h["page_shift"]) - 1) >> h["page_shift"]
    if (nr + 63) // 64 * 8 != h["plane_size"]:
        sys.exit("craft-xattr.py: cannot grow the record's content within its plane size")
    return edit(rec, content_size=content, nr_pages=nr)


def data_cases(size):
    rec = record_for(size)
    n = len(rec)
    good = pbxz(n, frame(rec))
    h = dict(zip(NAMES, HDR.unpack_from(rec)))
    flip = bytearray(rec)
    flip[128 + 3] ^= 0x10                   # a plane bit: the CRC no longer matches
    past = bytearray(rec)
    if h["nr_pages"] % 64 == 0:
        sys.exit("craft-xattr.py: no spare bits past the last granule: make the file's "
                 "size no multiple of 64 granules")
    past[128 + h["plane_size"] - 1] |= 0x80
    bomb = 64 << 20
    return [
        ("valid", good, "accept"),
        ("valid-checksummed", pbxz(n, frame(rec, checksum=True)), "accept"),
        ("valid-two-blocks", pbxz(n, frame(rec, blocks=block(0, rec[:100], 100, False) +
                                            block(0, rec[100:], n - 100, True))), "accept"),
        # the PBXZ prefix
        ("empty", b"", "xattr"),
        ("short", good[:6], "xattr"),
        ("prefix-only", good[:8], "xattr"),
        ("bad-magic", struct.pack("<I", 0x5A584251) + good[4:], "xattr"),
        ("marker-magic", struct.pack("<I", PBEM) + good[4:], "marker"),
        ("prefix-size-larger", pbxz(n + 8, frame(rec)), "xattr"),
        ("prefix-size-smaller", pbxz(n - 8, frame(rec)), "xattr"),
        # sizes out of range, the prefix and the frame agreeing on them
        ("size-tiny", pbxz(64, frame(rec[:64])), "size"),
        ("size-huge", pbxz(MAX_RECORD + 1, frame(fcs=MAX_RECORD + 1, window_log=17,
                                                 blocks=rle_blocks(MAX_RECORD + 1))), "size"),
        ("size-max-u32", pbxz(0xFFFFFFFF, frame(fcs=0xFFFFFFFF, window_log=17,
                                                blocks=rle_blocks(BLOCK_MAX))), "size"),
        # the zstd frame
        ("frame-magic", pbxz(n, b"\x29" + frame(rec)[1:]), "xattr"),
        ("truncated-header", good[:8 + 5], "xattr"),
        ("truncated-block", good[:-10], "xattr"),
        ("truncated-last-byte", good[:-1], "xattr"),
        ("no-content-size", pbxz(n, frame(rec, fcs=None)), "xattr"),
        ("content-size-larger", pbxz(n, frame(rec, fcs=n + 64)), "xattr"),
        ("content-size-smaller", pbxz(n, frame(rec, fcs=n - 64)), "xattr"),
        ("bomb-declared", pbxz(n, frame(fcs=bomb, window_log=17, blocks=rle_blocks(bomb))), "xattr"),
        ("bomb-undeclared", pbxz(n, frame(fcs=None, blocks=rle_blocks(bomb))), "xattr"),
        ("bomb-at-max", pbxz(MAX_RECORD, frame(fcs=None, blocks=rle_blocks(bomb))), "xattr"),
        ("bomb-both-declared", pbxz(bomb, frame(fcs=bomb, window_log=17,
                                                blocks=rle_blocks(bomb))), "size"),
        ("window-huge", pbxz(n, frame(rec, fcs=None, window_log=41)), "xattr"),
        ("reserved-block-type", pbxz(n, frame(rec, blocks=block(3, rec, n, True))), "xattr"),
        ("reserved-frame-bit", pbxz(n, frame(rec, fhd_extra=1 << 3)), "xattr"),
        ("dictionary", pbxz(n, frame(rec, dict_id=0x12345678)), "xattr"),
        ("bad-content-checksum", pbxz(n, frame(rec, checksum=(xxh64(rec) ^ 1) & 0xFFFFFFFF)), "xattr"),
        ("trailing-bytes", good + b"\0\0\0\0", "xattr"),
        # the record inside a sound frame
        ("record-checksum", pbxz(n, frame(bytes(flip))), "checksum"),
        ("record-magic", pbxz(n, frame(edit(rec, magic=0x12345678))), "header"),
        ("no-xattr-flag", pbxz(n, frame(edit(rec, flags=0))), "header"),
        ("unknown-flag", pbxz(n, frame(edit(rec, flags=F_XATTR | 1 << 7))), "header"),
        ("granule-small", pbxz(n, frame(edit(rec, page_shift=11))), "header"),
        ("granule-mismatch", pbxz(n, frame(edit(rec, page_shift=h["page_shift"] + 1))), "header"),
        ("threshold-zero", pbxz(n, frame(edit(rec, threshold=0))), "header"),
        ("content-size-zero", pbxz(n, frame(edit(rec, content_size=0, nr_pages=0))), "header"),
        ("bits-past-end", pbxz(n, frame(seal(h, bytes(past[128:])))), "header"),
        ("record-padded", pbxz(n + 8, frame(rec + b"\0" * 8)), "header"),
        # a sound record that does not describe this file
        ("stale-content-size", pbxz(n, frame(grown_record(rec))), "bounds"),
        ("elf-offset-in-xattr", pbxz(n, frame(edit(rec, record_offset=4096))), "bounds"),
        ("elf-tail-in-xattr", pbxz(n, frame(edit(rec, tail_size=4096))), "bounds"),
    ]

# ---------------------------------------------------------------- libraries


class Lib:
    """A stamped ELF library: where its .pbitmap section and PT_LOAD end are."""

    def __init__(self, data):
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            sys.exit("craft-xattr.py: not a 64-bit little-endian ELF file")
        self.data = bytes(data)
        shoff, = struct.unpack_from("<Q", data, 40)
        shnum, = struct.unpack_from("<H", data, 60)
        sh = struct.Struct("<IIQQQQIIQQ")
        for i in range(shnum):
            f = sh.unpack_from(data, shoff + i * sh.size)
            if i == shnum - 1 and f[1] == SHT_PROGBITS:     # .pbitmap, appended last
                # Two slots of rec_size bytes, stride apart (uapi/linux/pbitmap.h).
                self.rec_off, self.sec_size = f[4], f[5]
                k = (self.sec_size + 1023) // 1024
                self.rec_size, self.stride = self.sec_size - k * 512, k * 512
                break
        else:
            sys.exit("craft-xattr.py: no .pbitmap section (stamp it with pbitmap add)")
        rec = data[self.rec_off:self.rec_off + self.rec_size]
        h = dict(zip(NAMES, HDR.unpack_from(rec)))
        if not any(rec[128:]):
            sys.exit("craft-xattr.py: no page marked in the library's bitmap (pbitmap set)")
        self.header = h

    def record(self):
        return self.data[self.rec_off:self.rec_off + self.rec_size]


def marker(off, size, file_size, magic=PBEM, reserved=0, crc=None):
    m = MARKER.pack(magic, size, off, file_size, 0, reserved)
    return MARKER.pack(magic, size, off, file_size,
                       zlib.crc32(m) if crc is None else crc, reserved)


def lib_cases(lib):
    off, size, fsize = lib.rec_off, lib.sec_size, len(lib.data)
    good = marker(off, size, fsize)
    rec = lib.record()
    flip = bytearray(rec)
    flip[128] ^= 0x01                       # page 0: inside any file, the CRC no longer matches

    def with_record(new):
        """@new in both slots: either alone leaves the other current."""
        s1 = off + lib.stride
        return (lib.data[:off] + new + lib.data[off + len(new):s1] + new +
                lib.data[s1 + len(new):])
    grown = lib.data + b"\0" * (2 * MAX_RECORD + 4096)
    return [
        # name, file bytes (None: unchanged), attribute, reason
        ("valid", None, good, "accept"),
        ("unknown-magic", None, marker(off, size, fsize, magic=0x12345678), "xattr"),
        ("pbxz-magic", None, marker(off, size, fsize, magic=PBXZ), "xattr"),
        ("marker-checksum", None, good[:24] + bytes([good[24] ^ 1]) + good[25:], "marker"),
        ("marker-short", None, good[:24], "marker"),
        ("marker-long", None, good + b"\0" * 8, "marker"),
        ("marker-reserved", None, marker(off, size, fsize, reserved=1), "marker"),
        ("marker-stale-size", None, marker(off, size, fsize + 4096), "marker"),
        ("marker-stale-truncated", lib.data[:-8], marker(off, size, fsize), "marker"),
        # a marker pointing outside the file is no sound marker for it
        ("offset-beyond-eof", None, marker(fsize + 4096, size, fsize), "marker"),
        ("offset-overflow", None, marker((1 << 64) - 4096, size, fsize), "marker"),
        ("offset-misaligned", None, marker(off + 8, size, fsize), "marker"),
        ("size-past-eof", None, marker(off, fsize - off + 4096, fsize), "marker"),
        ("size-tiny", None, marker(off, 16, fsize), "marker"),
        # pointing into the program's own bytes: no record there
        ("offset-in-load", None, marker(4096, size, fsize), "header"),
        ("offset-zero", None, marker(0, size, fsize), "header"),
        ("size-too-large", grown, marker(off, 2 * MAX_RECORD + 4096, len(grown)), "size"),
        ("record-checksum", with_record(bytes(flip)), good, "checksum"),
        ("record-magic", with_record(edit(rec, magic=0x12345678)), good, "header"),
        ("record-xattr-flag", with_record(edit(rec, flags=F_XATTR)), good, "header"),
        # a sound record that is not where it says, or covers itself
        ("record-offset-field", with_record(edit(rec, record_offset=off + 4096)), good, "bounds"),
        ("record-in-content", with_record(grown_record(rec, off + 1)), good, "bounds"),
        ("record-tail-size", with_record(edit(rec, tail_size=lib.header["tail_size"] + 8)), good, "bounds"),
        ("record-size-mismatch", None, marker(off, size + 8, fsize), "header"),
    ]

# ---------------------------------------------------------------- main


def setxattr(path, value):
    os.setxattr(path, "user.pbitmap", value)


def main(argv):
    if len(argv) != 4 or argv[1] not in ("data", "lib"):
        sys.exit(__doc__)
    kind, src, outdir = argv[1:]
    os.makedirs(outdir, exist_ok=True)
    if kind == "data":
        for name, value, reason in data_cases(os.stat(src).st_size):
            path = os.path.join(outdir, name)
            shutil.copyfile(src, path)
            setxattr(path, value)
            print(name, reason)
    else:
        lib = Lib(open(src, "rb").read())
        for name, data, value, reason in lib_cases(lib):
            d = os.path.join(outdir, name)
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, os.path.basename(src))
            with open(path, "wb") as f:
                f.write(lib.data if data is None else data)
            os.chmod(path, 0o755)
            setxattr(path, value)
            print(name, reason)


if __name__ == "__main__":
    main(sys.argv)
