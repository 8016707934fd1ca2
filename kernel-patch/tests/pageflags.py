"""Which cached pages of a mapped file sit in large folios, for the guest
tests (t-features, t-xfs-folios).

  map_address(path)             where this process maps `path`, from
                                /proc/self/maps (the last mapping of it)
  compound_pages(addr, pages)   how many of the mapping's page indices
                                `pages` are mapped and belong to a compound
                                page (a folio larger than one page): each
                                PFN from /proc/self/pagemap, its flags from
                                /proc/kpageflags (root only)

The pages must have been touched, so that they are mapped.
"""
import struct

PAGE = 4096
KPF_COMPOUND_HEAD, KPF_COMPOUND_TAIL = 15, 16


def map_address(path):
    addr = None
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith(path):
            addr = int(line.split("-")[0], 16)
    if addr is None:
        raise SystemExit("the mapping of %s is not in /proc/self/maps" % path)
    return addr


def compound_pages(addr, pages):
    large = 0
    with open("/proc/self/pagemap", "rb") as pm, open("/proc/kpageflags", "rb") as kf:
        for i in pages:
            pm.seek((addr // PAGE + i) * 8)
            entry = struct.unpack("Q", pm.read(8))[0]
            if not entry >> 63:
                continue
            kf.seek((entry & ((1 << 55) - 1)) * 8)
            flags = struct.unpack("Q", kf.read(8))[0]
            if flags & (1 << KPF_COMPOUND_HEAD | 1 << KPF_COMPOUND_TAIL):
                large += 1
    return large
