#!/usr/bin/env python3
"""Independent ELF/pbitmap inspection for the tests (no code shared with the tool).

  elfcheck.py stamp ORIG STAMPED   structural checks of a stamped ELF file against
                                   its original (see check_stamp); prints figures
  elfcheck.py record FILE          "OFFSET SIZE" of the .pbitmap record, from the
                                   section header table alone
  elfcheck.py slots FILE           "SIZE OFFSET0 OFFSET1" of the record's two slots
  elfcheck.py header FILE          the record header fields, one "name=value" a line
  elfcheck.py dump FILE           the record of FILE, from its .pbitmap section or
                                   (non-ELF) its user.pbitmap xattr, decoded
                                   independently (zstd through libzstd), checked
                                   (CRC-32, geometry); prints the header fields,
                                   xattr_len= for an xattr, and "ageN=LIST" with
                                   the granules set in each generation (N-M runs)
  elfcheck.py marker FILE          the user.pbitmap marker of a stamped ELF file
                                   (struct pbitmap_marker): magic "PBEM", record
                                   offset and size those of the .pbitmap section,
                                   file size FILE's, CRC-32 (zlib) of the 32 bytes
                                   with the checksum zero, reserved 0; prints them
  elfcheck.py no-marker FILE       FILE has no user.pbitmap attribute at all
  elfcheck.py field FILE NAME      offset in FILE of ELF header field NAME
                                   (e_type e_shoff e_shnum e_shentsize e_shstrndx
                                   e_phoff e_phnum), then its size

Exit status 0 when every check holds, 1 with a message on stderr otherwise.
"""
import struct
import sys

SHT_PROGBITS = 1
PBITMAP_MAGIC = 0x504D4250
RECORD_ALIGN = 4096
# struct pbitmap_header (uapi/linux/pbitmap.h), little-endian, 128 bytes.
HDR_FMT = "<IHHIIQQIBBBBQQQIHHQQII32s"
HDR_NAMES = ("magic version header_size checksum flags nr_pages content_size "
             "plane_size page_shift nr_planes threshold newest_plane runs "
             "last_update orig_shoff orig_shnum orig_shstrndx reserved0 "
             "record_offset tail_size plan_size reserved1 reserved").split()
assert struct.calcsize(HDR_FMT) == 128


class Bad(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Bad(msg)


class Elf:
    """Just enough of an ELF parser: header, section and program headers."""

    def __init__(self, data):
        check(data[:4] == b"\x7fELF", "no ELF magic")
        check(data[5] == 1, "not little-endian")
        self.data = data
        self.cls = data[4]
        if self.cls == 2:
            f = "<HHIQQQIHHHHHH"
            self.off = {"e_type": (16, 2), "e_phoff": (32, 8), "e_shoff": (40, 8),
                        "e_phnum": (56, 2), "e_shentsize": (58, 2),
                        "e_shnum": (60, 2), "e_shstrndx": (62, 2)}
        elif self.cls == 1:
            f = "<HHIIIIIHHHHHH"
            self.off = {"e_type": (16, 2), "e_phoff": (28, 4), "e_shoff": (32, 4),
                        "e_phnum": (44, 2), "e_shentsize": (46, 2),
                        "e_shnum": (48, 2), "e_shstrndx": (50, 2)}
        else:
            raise Bad("bad EI_CLASS")
        (self.e_type, self.e_machine, _, _, self.e_phoff, self.e_shoff, _,
         _, self.e_phentsize, self.e_phnum, self.e_shentsize, self.e_shnum,
         self.e_shstrndx) = struct.unpack_from(f, data, 16)

    def sections(self):
        if self.cls == 2:
            fmt, keys = "<IIQQQQIIQQ", ("name type flags addr offset size link info align entsize")
        else:
            fmt, keys = "<IIIIIIIIII", ("name type flags addr offset size link info align entsize")
        keys = keys.split()
        size = struct.calcsize(fmt)
        check(self.e_shentsize == size, "e_shentsize %d" % self.e_shentsize)
        check(self.e_shoff + self.e_shnum * size <= len(self.data),
              "section header table beyond EOF")
        out = []
        for i in range(self.e_shnum):
            out.append(dict(zip(keys, struct.unpack_from(fmt, self.data, self.e_shoff + i * size))))
        strtab = out[self.e_shstrndx]
        for s in out:
            start = strtab["offset"] + s["name"]
            end = self.data.index(b"\0", start)
            s["sname"] = self.data[start:end].decode("latin-1")
        return out

    def segments(self):
        if self.cls == 2:
            fmt, keys = "<IIQQQQQQ", "type flags offset vaddr paddr filesz memsz align"
        else:
            fmt, keys = "<IIIIIIII", "type offset vaddr paddr filesz memsz flags align"
        keys = keys.split()
        out = []
        for i in range(self.e_phnum):
            out.append(dict(zip(keys, struct.unpack_from(fmt, self.data, self.e_phoff + i * self.e_phentsize))))
        return out


def record_of(elf):
    secs = elf.sections()
    pb = [s for s in secs if s["sname"] == ".pbitmap"]
    check(len(pb) == 1, "%d sections named .pbitmap" % len(pb))
    check(pb[0] is secs[-1], ".pbitmap is not the last section")
    check(pb[0]["type"] == SHT_PROGBITS and pb[0]["flags"] == 0,
          ".pbitmap: type %#x flags %#x, not SHT_PROGBITS without flags"
          % (pb[0]["type"], pb[0]["flags"]))
    return secs, pb[0]


SLOT_ALIGN = 512


def slots_of(data, off, size):
    """The two slots of a section: (slot size, [offset of slot 0, of slot 1]).

    Slots of r bytes are round_up(r, 512) apart; the section is that plus r
    (uapi/linux/pbitmap.h), so r follows from the section's size alone."""
    k = (size + 2 * SLOT_ALIGN - 1) // (2 * SLOT_ALIGN)
    r = size - k * SLOT_ALIGN
    check((k - 1) * SLOT_ALIGN < r <= k * SLOT_ALIGN, "section size %d holds no two slots" % size)
    return r, [off, off + k * SLOT_ALIGN]


def current_slot(data, off, size):
    """Bytes of the current slot: the valid one with more runs, slot 0 on a tie."""
    import zlib
    r, offs = slots_of(data, off, size)
    best = None
    for at in offs:
        rec = data[at:at + r]
        h = dict(zip(HDR_NAMES, struct.unpack_from(HDR_FMT, rec, 0)))
        if h["magic"] != PBITMAP_MAGIC or zlib.crc32(rec[:8] + b"\0\0\0\0" + rec[12:]) != h["checksum"]:
            continue
        if best is None or h["runs"] > best[1]:
            best = (rec, h["runs"])
    check(best is not None, "neither slot holds a valid record")
    return best[0]


def header_at(data, off):
    check(off + 128 <= len(data), "record header beyond EOF")
    return dict(zip(HDR_NAMES, struct.unpack_from(HDR_FMT, data, off)))


def check_stamp(orig_path, stamped_path):
    orig = open(orig_path, "rb").read()
    data = open(stamped_path, "rb").read()
    n = len(orig)
    o, e = Elf(orig), Elf(data)
    check(len(data) > n, "stamped file not longer than the original")

    # Only e_shoff and e_shnum may differ in the first n bytes.
    allowed = set()
    for field in ("e_shoff", "e_shnum"):
        pos, size = e.off[field]
        allowed.update(range(pos, pos + size))
    diffs = [i for i in range(min(n, 4096)) if orig[i] != data[i] and i not in allowed]
    check(not diffs, "original bytes changed at offsets %s" % diffs[:8])
    check(orig[4096:] == data[4096:n], "original bytes changed past offset 4096")
    check(e.e_shnum == o.e_shnum + 1, "e_shnum %d, expected %d" % (e.e_shnum, o.e_shnum + 1))
    check(e.e_shstrndx == o.e_shstrndx, "e_shstrndx changed")
    check(e.e_shoff >= n, "new section header table inside the original content")

    osecs = o.sections()
    secs, pb = record_of(e)
    check(secs[-1] is pb, ".pbitmap is not the last section header")
    check(pb["sname"] == ".pbitmap", "section name %r" % pb["sname"])
    for i, (a, b) in enumerate(zip(osecs, secs)):
        for k in a:
            if i == o.e_shstrndx and k in ("offset", "size"):
                continue
            check(a[k] == b[k], "section [%d] %s: %s %r -> %r" % (i, a["sname"], k, a[k], b[k]))
    ostr, nstr = osecs[o.e_shstrndx], secs[e.e_shstrndx]
    check(nstr["offset"] >= n, "new .shstrtab inside the original content")
    check(data[nstr["offset"]:nstr["offset"] + ostr["size"]] ==
          orig[ostr["offset"]:ostr["offset"] + ostr["size"]], ".shstrtab copy differs")
    check(nstr["size"] == ostr["size"] + len(".pbitmap") + 1, ".shstrtab copy size")

    off, size = pb["offset"], pb["size"]
    check(pb["flags"] == 0, "section flags %#x" % pb["flags"])
    check(pb["addr"] == 0, "section address %#x" % pb["addr"])
    check(off % RECORD_ALIGN == 0, "record offset %d not a multiple of %d" % (off, RECORD_ALIGN))
    check(off >= n, "record offset %d below original size %d" % (off, n))
    check(off + size <= len(data), "record beyond EOF")
    check(data[n:off] == bytes(off - n), "padding before the record is not zero")
    for p in e.segments():
        if p["type"] == 1:
            check(p["offset"] + p["filesz"] <= off, "record inside a PT_LOAD")
    h = header_at(data, off)
    check(h["magic"] == PBITMAP_MAGIC, "record magic %#x" % h["magic"])
    check(h["content_size"] == n, "content_size %d, original is %d" % (h["content_size"], n))
    check(h["record_offset"] == off, "record_offset %d, section says %d" % (h["record_offset"], off))
    check(h["tail_size"] == len(data) - n, "tail_size %d, file grew by %d" % (h["tail_size"], len(data) - n))
    slot, offs = slots_of(data, off, size)
    check(h["header_size"] + h["plane_size"] * h["nr_planes"] + h["plan_size"] == slot,
          "record size vs geometry")
    check(h["version"] == (3 if h["plan_size"] else 2), "version %d with a plan area of %d"
          % (h["version"], h["plan_size"]))
    check(data[offs[1]:offs[1] + slot] == data[off:off + slot], "the two slots differ")
    check(data[off + slot:offs[1]] == bytes(offs[1] - off - slot), "bytes between the slots not zero")
    check(h["reserved0"] == 0 and h["reserved1"] == 0 and h["reserved"] == bytes(32),
          "reserved fields not zero")
    check(h["orig_shoff"] == o.e_shoff and h["orig_shnum"] == o.e_shnum and
          h["orig_shstrndx"] == o.e_shstrndx, "undo data in the header differs from the original")
    print("original=%d stamped=%d record_offset=%d record_size=%d planes=%d pages=%d"
          % (n, len(data), off, size, h["nr_planes"], h["nr_pages"]))


# struct pbitmap_marker: magic record_size record_offset file_size checksum reserved.
MARKER_FMT = "<IIQQII"
MARKER_MAGIC = 0x4D454250  # "PBEM"
assert struct.calcsize(MARKER_FMT) == 32


def check_marker(path):
    import os
    import zlib
    data = open(path, "rb").read()
    _, pb = record_of(Elf(data))
    try:
        val = os.getxattr(path, "user.pbitmap")
    except OSError as ex:
        raise Bad("no user.pbitmap marker: %s" % ex.strerror)
    check(len(val) == 32, "marker is %d bytes, not 32" % len(val))
    check(val[:4] == b"PBEM", "marker magic %r" % val[:4])
    magic, rsize, roff, fsize, crc, reserved = struct.unpack(MARKER_FMT, val)
    check(magic == MARKER_MAGIC, "marker magic %#x" % magic)
    want = zlib.crc32(val[:24] + b"\0\0\0\0" + val[28:])
    check(crc == want, "marker CRC-32 %#x, computed %#x" % (crc, want))
    check(reserved == 0, "marker reserved field %#x" % reserved)
    check(roff == pb["offset"], "marker record_offset %d, section at %d" % (roff, pb["offset"]))
    check(rsize == pb["size"], "marker record_size %d, section is %d bytes" % (rsize, pb["size"]))
    check(fsize == len(data), "marker file_size %d, file is %d bytes" % (fsize, len(data)))
    print("record_offset=%d record_size=%d file_size=%d checksum=%#x" % (roff, rsize, fsize, crc))


def check_no_marker(path):
    import errno
    import os
    try:
        val = os.getxattr(path, "user.pbitmap")
    except OSError as ex:
        check(ex.errno == errno.ENODATA, "getxattr: %s" % ex.strerror)
        return
    raise Bad("has a user.pbitmap attribute (%d bytes, %r...)" % (len(val), val[:4]))


def zstd_decompress(frame, size):
    import ctypes
    lib = ctypes.CDLL("libzstd.so.1")
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
    lib.ZSTD_isError.restype = ctypes.c_uint
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    out = ctypes.create_string_buffer(size)
    n = lib.ZSTD_decompress(out, size, frame, len(frame))
    check(not lib.ZSTD_isError(n), "zstd frame does not decompress")
    check(n == size, "zstd frame gives %d bytes, header says %d" % (n, size))
    return out.raw[:n]


def runs(bits):
    out, i = [], 0
    while i < len(bits):
        if bits[i]:
            j = i
            while j + 1 < len(bits) and bits[j + 1]:
                j += 1
            out.append(str(i) if i == j else "%d-%d" % (i, j))
            i = j + 1
        else:
            i += 1
    return ",".join(out)


def dump(path):
    import os
    import zlib
    data = open(path, "rb").read(4)
    if data == b"\x7fELF":
        data = open(path, "rb").read()
        _, pb = record_of(Elf(data))
        rec = current_slot(data, pb["offset"], pb["size"])
        extra = []
    else:
        val = os.getxattr(path, "user.pbitmap")
        magic, size = struct.unpack_from("<II", val, 0)
        check(magic == 0x5A584250, "xattr magic %#x" % magic)
        rec = zstd_decompress(val[8:], size)
        extra = ["xattr_len=%d" % len(val)]
    h = dict(zip(HDR_NAMES, struct.unpack_from(HDR_FMT, rec, 0)))
    check(h["magic"] == PBITMAP_MAGIC, "record magic")
    crc = zlib.crc32(rec[:8] + b"\0\0\0\0" + rec[12:])
    check(crc == h["checksum"], "CRC-32 %#x, header says %#x" % (crc, h["checksum"]))
    npages, ps, g = h["nr_pages"], h["plane_size"], h["nr_planes"]
    check(npages == (h["content_size"] + (1 << h["page_shift"]) - 1) >> h["page_shift"], "nr_pages")
    check(ps == (npages + 63) // 64 * 8, "plane_size")
    check(len(rec) == 128 + ps * g + h["plan_size"], "record size")
    for k, v in h.items():
        print("%s=%s" % (k, v.hex() if isinstance(v, bytes) else v))
    for line in extra:
        print(line)
    for age in range(g):
        idx = (h["newest_plane"] + g - age) % g
        plane = rec[128 + idx * ps:128 + (idx + 1) * ps]
        bits = [(plane[n >> 3] >> (n & 7)) & 1 for n in range(npages)] if npages <= (1 << 20) else []
        print("age%d=%s" % (age, runs(bits)))
        print("count%d=%d" % (age, sum(bin(b).count("1") for b in plane)))


# struct pbitmap_plan, pbitmap_plan_file, pbitmap_plan_step (uapi/linux/pbitmap.h).
PLAN_FMT, PLAN_FILE_FMT, PLAN_STEP_FMT = "<IIHHII12s", "<QQIIII", "<IIHH"
PLAN_MAGIC = 0x4C504250  # "PBPL"
PLAN_F_ORDER = 1  # an order table (nr_steps 16-bit step indices) follows the steps
PLAN_F_META = 2  # a metadata table follows the names, at a multiple of 8 bytes
# struct pbitmap_plan_meta (dev, nr, uuid, reserved), pbitmap_plan_meta_range
PLAN_META_FMT, PLAN_META_RANGE_FMT = "<II16sQ", "<QIB3s"


def plan(path):
    """The current slot's plan, parsed on its own: one line per step,
    "step FILE-PATH START NR" in plan order, after one line per file
    "file INDEX PATH INO SIZE DEV GEN"; with an order table, then one line
    "order I J ..." (its step indices, checked to be a permutation); with a
    metadata table, then "meta DEV UUID" (32 hex digits) and one line per
    range, "mrange START NR AGE" (checked: ascending, disjoint, nr >= 1, age
    <= 3, padding and reserved fields zero)."""
    data = open(path, "rb").read()
    _, pb = record_of(Elf(data))
    rec = current_slot(data, pb["offset"], pb["size"])
    h = header_at(rec, 0)
    check(h["plan_size"], "no plan area")
    area = rec[len(rec) - h["plan_size"]:]
    magic, used, nr_files, flags, nr_steps, names_size, r = struct.unpack_from(PLAN_FMT, area, 0)
    check(magic == PLAN_MAGIC, "plan magic %#x" % magic)
    check(flags & ~(PLAN_F_ORDER | PLAN_F_META) == 0, "plan flags %#x" % flags)
    table = 2 * nr_steps if flags & PLAN_F_ORDER else 0
    base = 32 + 32 * nr_files + 12 * nr_steps + table + names_size
    meta_at = (base + 7) // 8 * 8
    meta_nr = struct.unpack_from("<I", area, meta_at + 4)[0] if flags & PLAN_F_META else 0
    check(used == (meta_at + 32 + 16 * meta_nr if flags & PLAN_F_META else base),
          "plan size vs tables")
    check(area[used:] == bytes(len(area) - used), "bytes past the plan not zero")
    files = [struct.unpack_from(PLAN_FILE_FMT, area, 32 + 32 * i) for i in range(nr_files)]
    names_at = 32 + 32 * nr_files + 12 * nr_steps + table
    names = area[names_at:names_at + names_size]
    paths = [names[f[4]:names.index(0, f[4])].decode() for f in files]
    for i, (f, p) in enumerate(zip(files, paths)):
        print("file", i, p, f[0], f[1], f[2], f[3])
    for i in range(nr_steps):
        start, nr, fi, _ = struct.unpack_from(PLAN_STEP_FMT, area, 32 + 32 * nr_files + 12 * i)
        check(fi < nr_files and nr > 0, "step %d: file %d, %d units" % (i, fi, nr))
        check((start + nr) * 4096 <= files[fi][1] + 4095, "step %d past its file" % i)
        print("step", paths[fi], start, nr)
    if table:
        order = struct.unpack_from("<%dH" % nr_steps, area, names_at - table)
        check(sorted(order) == list(range(nr_steps)), "order table %s" % (order,))
        print("order", *order)
    if flags & PLAN_F_META:
        check(area[base:meta_at] == bytes(meta_at - base), "padding before the metadata table")
        dev, nr, uuid, reserved = struct.unpack_from(PLAN_META_FMT, area, meta_at)
        check(reserved == 0 and 1 <= nr <= 512 and any(uuid), "metadata table head")
        print("meta", dev, uuid.hex())
        end = 0
        for i in range(nr):
            start, n, age, res = struct.unpack_from(PLAN_META_RANGE_FMT, area, meta_at + 32 + 16 * i)
            check(n >= 1 and age <= 3 and res == bytes(3) and start >= end and
                  start + n <= 1 << 40, "metadata range %d" % i)
            end = start + n
            print("mrange", start, n, age)


def main(argv):
    try:
        if argv[1] == "stamp":
            check_stamp(argv[2], argv[3])
        elif argv[1] == "record":
            _, pb = record_of(Elf(open(argv[2], "rb").read()))
            print(pb["offset"], pb["size"])
        elif argv[1] == "slots":
            _, pb = record_of(Elf(open(argv[2], "rb").read()))
            size, offs = slots_of(None, pb["offset"], pb["size"])
            print(size, *offs)
        elif argv[1] == "header":
            data = open(argv[2], "rb").read()
            _, pb = record_of(Elf(data))
            for k, v in header_at(data, pb["offset"]).items():
                print("%s=%s" % (k, v.hex() if isinstance(v, bytes) else v))
        elif argv[1] == "plan":
            plan(argv[2])
        elif argv[1] == "dump":
            dump(argv[2])
        elif argv[1] == "marker":
            check_marker(argv[2])
        elif argv[1] == "no-marker":
            check_no_marker(argv[2])
        elif argv[1] == "field":
            pos, size = Elf(open(argv[2], "rb").read()).off[argv[3]]
            print(pos, size)
        else:
            raise Bad("unknown command " + argv[1])
    except Bad as ex:
        print("elfcheck: %s: %s" % (argv[-1], ex), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
