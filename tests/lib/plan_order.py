#!/usr/bin/env python3
"""plan_order.py FILE ORDER [FLAGS]: give the start-up plan of the stamped
ELF FILE, as `pbitmap plan` wrote it (no order table), the plan flags FLAGS
(default 1, PBITMAP_PLAN_F_ORDER) and, with that flag, the order table
ORDER (comma-separated step indices, written as given: valid or not; one
per step) between the steps and the names, `used` grown to match; in both
slots, each resealed with a right checksum, so that only the plan's own
checks can refuse it (docs/FORMAT.md, "Start-up plan").  Used by
tests/tool/t-plan.sh and t-daemon-plan.sh."""
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import elfcheck as ec  # noqa: E402


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    path = sys.argv[1]
    order = [int(x) for x in sys.argv[2].split(",") if x]
    flags = int(sys.argv[3], 0) if len(sys.argv) == 4 else ec.PLAN_F_ORDER
    data = bytearray(open(path, "rb").read())
    _, pb = ec.record_of(ec.Elf(bytes(data)))
    size, offs = ec.slots_of(bytes(data), pb["offset"], pb["size"])
    for at in offs:
        h = ec.header_at(bytes(data), at)
        area_size = h["plan_size"]
        plan = at + size - area_size
        magic, used, nr_files, old_flags, nr_steps, names_size, _ = \
            struct.unpack_from(ec.PLAN_FMT, data, plan)
        if magic != ec.PLAN_MAGIC or old_flags or \
           used != 32 + 32 * nr_files + 12 * nr_steps + names_size:
            sys.exit("plan_order.py: %s: no plan as `pbitmap plan` writes it (magic %#x, "
                     "flags %#x)" % (path, magic, old_flags))
        names_at = plan + 32 + 32 * nr_files + 12 * nr_steps
        names = bytes(data[names_at:names_at + names_size])
        table = b""
        if flags & ec.PLAN_F_ORDER:
            if len(order) != nr_steps:
                sys.exit("plan_order.py: %d indices for %d steps" % (len(order), nr_steps))
            table = struct.pack("<%dH" % nr_steps, *order)
        used += len(table)
        if used > area_size:
            sys.exit("plan_order.py: %s: no room for the table" % path)
        rest = plan + area_size - names_at
        data[names_at:plan + area_size] = (table + names).ljust(rest, b"\0")
        struct.pack_into("<I", data, plan + 4, used)
        struct.pack_into("<H", data, plan + 10, flags)
        struct.pack_into("<I", data, at + 8, 0)
        struct.pack_into("<I", data, at + 8, zlib.crc32(bytes(data[at:at + size])))
    open(path, "r+b").write(data)


if __name__ == "__main__":
    main()
