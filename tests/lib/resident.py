#!/usr/bin/env python3
"""resident.py FILE N-M...: for each range of FILE's pages (inclusive), how
many are in the page cache, as one line of numbers (mincore() of a
PROT_READ mapping that is never touched).  FILE "fd:N" is the descriptor N
this process inherited, mapped without an open: an open of its own would
be one more open event for the daemon a test watches.  Used by the tests
of pbitmapd (tests/tool/t-daemon.sh, kernel-patch/tests/t-daemon.sh)."""
import ctypes
import mmap
import os
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    if sys.argv[1].startswith("fd:"):
        fd = int(sys.argv[1][3:])
    else:
        fd = os.open(sys.argv[1], os.O_RDONLY)
    size = os.fstat(fd).st_size
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        sys.exit("resident.py: cannot map %s" % sys.argv[1])
    vec = ctypes.create_string_buffer(pages)
    if libc.mincore(addr, size, vec):
        sys.exit("resident.py: mincore: %s" % os.strerror(ctypes.get_errno()))
    counts = []
    for r in sys.argv[2:]:
        a, b = map(int, r.split("-"))
        counts.append(sum(vec.raw[n] & 1 for n in range(a, min(b, pages - 1) + 1)))
    print(" ".join(map(str, counts)))


main()
