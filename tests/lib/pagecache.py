#!/usr/bin/env python3
"""pagecache.py VERB FILE [ARG...]: a file's pages in and out of the page
cache, for the tests of what is read around cached pages
(tests/tool/t-prefetch-cached.sh, kernel-patch/tests/t-join-cached.sh).

  evict FILE          written back, then dropped (POSIX_FADV_DONTNEED:
                      pages under I/O or mapped stay; the caller checks)
  cache FILE N-M...   pages N to M read one at a time, readahead off
                      (POSIX_FADV_RANDOM on this descriptor)
  map FILE            mapped read-only and unmapped, nothing touched (the
                      kernel's mmap prefetch runs)
  runs FILE [FROM]    the resident pages from FROM (0) on, as runs
                      "N-M,..." or "none" (mincore() of a PROT_READ mapping
                      that is never touched: as root, or the owner)

Pages are of 4 KiB: the tests' page numbers assume them."""
import ctypes
import mmap
import os
import sys

PAGE = 4096


def runs(fd, size, lo):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    pages = (size + PAGE - 1) // PAGE
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        sys.exit("pagecache.py: cannot map the file")
    vec = ctypes.create_string_buffer(pages)
    if libc.mincore(addr, size, vec):
        sys.exit("pagecache.py: mincore: %s" % os.strerror(ctypes.get_errno()))
    out, start = [], None
    for i in range(lo, pages + 1):
        resident = i < pages and vec.raw[i] & 1
        if resident and start is None:
            start = i
        elif not resident and start is not None:
            out.append("%d-%d" % (start, i - 1))
            start = None
    return ",".join(out) or "none"


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("evict", "cache", "map", "runs"):
        sys.exit(__doc__)
    verb, path = sys.argv[1], sys.argv[2]
    fd = os.open(path, os.O_RDONLY)
    if verb == "evict":
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    elif verb == "cache":
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        for r in sys.argv[3:]:
            first, last = map(int, r.split("-"))
            for p in range(first, last + 1):
                os.pread(fd, PAGE, p * PAGE)
    elif verb == "map":
        mmap.mmap(fd, 0, prot=mmap.PROT_READ).close()
    else:
        print(runs(fd, os.fstat(fd).st_size, int(sys.argv[3]) if len(sys.argv) > 3 else 0))


if __name__ == "__main__":
    main()
