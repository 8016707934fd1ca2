#!/usr/bin/env python3
"""plan_identity.py FILE INDEX: give entry INDEX of the start-up plan of the
stamped ELF FILE the identity FILE has now (device, inode, generation,
size), in both slots, each resealed with a right checksum, written in place
so that the inode stays.  A plan that lists its own executable, as learned
plans do (docs/FORMAT.md, "Start-up plan"): `pbitmap plan PROGRAM PROGRAM`
names the inode PROGRAM had before the plan was written, which the write
replaced.  Used by tests/tool/t-daemon-plan.sh."""
import fcntl
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import elfcheck as ec  # noqa: E402

FS_IOC_GETVERSION = 0x80087601  # _IOR('v', 1, long); the kernel writes an int


def identity(f):
    """(ino, size, dev, generation) as struct pbitmap_plan_file holds them."""
    st = os.fstat(f.fileno())
    try:
        gen = struct.unpack_from("<I", fcntl.ioctl(f.fileno(), FS_IOC_GETVERSION, bytes(8)))[0]
    except OSError:
        gen = 0  # no generations here: the daemon and the kernel see 0 too
    return st.st_ino, st.st_size, st.st_dev & 0xFFFFFFFF, gen


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, index = sys.argv[1], int(sys.argv[2])
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        ino, size, dev, gen = identity(f)
        _, pb = ec.record_of(ec.Elf(bytes(data)))
        rsize, offs = ec.slots_of(bytes(data), pb["offset"], pb["size"])
        for at in offs:
            plan = at + rsize - ec.header_at(bytes(data), at)["plan_size"]
            magic, _, nr_files = struct.unpack_from(ec.PLAN_FMT, data, plan)[:3]
            if magic != ec.PLAN_MAGIC or index >= nr_files:
                sys.exit("plan_identity.py: %s: no plan with an entry %d" % (path, index))
            entry = plan + 32 + 32 * index
            name = struct.unpack_from(ec.PLAN_FILE_FMT, data, entry)[4]
            struct.pack_into(ec.PLAN_FILE_FMT, data, entry, ino, size, dev, gen, name, 0)
            struct.pack_into("<I", data, at + 8, 0)
            struct.pack_into("<I", data, at + 8, zlib.crc32(bytes(data[at:at + rsize])))
        f.seek(0)
        f.write(data)


if __name__ == "__main__":
    main()
