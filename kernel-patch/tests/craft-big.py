#!/usr/bin/env python3
"""Make a sound ELF record of the largest size the kernel reads (4 MiB).

  craft-big.py STAMPED OUT    writes OUT: STAMPED's program bytes, then a hole
                              up to 8 GiB of content, then a record of 16
                              planes of 262136 bytes (128 + 16 * 262136 =
                              4 MiB exactly) marking every odd granule in
                              its newest plane, twice (the section's two
                              slots), then STAMPED's .shstrtab
                              copy and section headers, moved to follow it;
                              and OUT's user.pbitmap marker

STAMPED must be stamped (pbitmap add).  The result passes every check the
kernel makes: its record is parsed, and its extent walk is the longest a
record can ask for (2 Mi granules times 16 planes, a run every other
granule).  The file is sparse: it takes about 8 MiB of disk.  Uses
craft.py's Image (beside this script) for the ELF and record fields.
"""
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import craft  # noqa: E402

MAX_RECORD = 4 << 20
PLANES = 16
HEADER = 128


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    src, out = argv[1], argv[2]
    img = craft.Image(open(src, "rb").read())
    h = img.header()
    if h["page_shift"] != 12:
        sys.exit("craft-big.py: STAMPED must have 4 KiB granules")
    old_tail = img.rec_off + img.sec_size
    plane_size = (MAX_RECORD - HEADER) // PLANES // 8 * 8
    nr_pages = plane_size * 8
    content = nr_pages << 12
    rec_size = HEADER + PLANES * plane_size
    assert rec_size <= MAX_RECORD
    stride = (rec_size + 511) // 512 * 512
    sec_size = stride + rec_size
    delta = content + sec_size - old_tail
    tail = bytearray(img.data[old_tail:])
    file_size = content + sec_size + len(tail)

    # The section headers live in the tail: every offset into the tail moves
    # by delta; .pbitmap now describes the big record.
    shoff = struct.unpack_from(img.shoff_fmt, img.data, img.shoff_at)[0]
    shnum = struct.unpack_from("<H", img.data, img.shnum_at)[0]
    for i in range(shnum):
        at = shoff - old_tail + i * img.sh.size
        f = list(img.sh.unpack_from(tail, at))
        if i == shnum - 1:      # .pbitmap, appended last
            f[4], f[5] = content, sec_size
        elif f[4] >= old_tail:
            f[4] += delta
        img.sh.pack_into(tail, at, *f)
    head = bytearray(img.data[:h["content_size"]])
    struct.pack_into(img.shoff_fmt, head, img.shoff_at, shoff + delta)

    h.update(nr_pages=nr_pages, content_size=content, plane_size=plane_size,
             nr_planes=PLANES, threshold=1, newest_plane=0,
             record_offset=content, tail_size=file_size - content, checksum=0)
    rec = bytearray(craft.HDR.pack(*(h[n] for n in craft.NAMES)))
    rec += b"\xaa" * plane_size + bytes((PLANES - 1) * plane_size)
    struct.pack_into("<I", rec, 8, zlib.crc32(bytes(rec)))

    with open(out, "wb") as f:
        f.write(head)
        f.seek(content)
        f.write(rec + bytes(stride - rec_size) + rec)
        f.write(tail)
    os.chmod(out, 0o755)
    m = [craft.MARKER_MAGIC, sec_size, content, file_size, 0, 0]
    m[4] = zlib.crc32(craft.MARKER.pack(*m))
    os.setxattr(out, "user.pbitmap", craft.MARKER.pack(*m))
    print(f"{out}: {file_size} bytes, record of {rec_size} bytes at {content}, "
          f"{nr_pages} granules, {PLANES} planes")


if __name__ == "__main__":
    main(sys.argv)
