#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ground_truth.py: which pages of which files a command really read.

Usage: ground_truth.py [-o OUT.json] [--ldd] [--require-fault-around]
                       [--require-cold] -f FILE [-f FILE]... -- CMD [ARG...]

The ground truth that `pbitmap record`, the kernel's learning and the
benchmark are measured against: the pages of each FILE that CMD faulted in
or read, page by page, with nothing read around them.  How:

  1. readahead off: read_ahead_kb=0 on the block device (its bdi) holding
     each FILE; fault-around off: fault_around_bytes=4096 in debugfs
     (mounted on /sys/kernel/debug if it is not);
  2. caches dropped (sync, drop_caches=3); each FILE's residency is read
     with mincore() and reported as "cached_before" (pages a running
     process keeps mapped cannot be dropped: such a file is not cold);
  3. CMD runs, stdin/stdout/stderr untouched;
  4. mincore() of each FILE: with readahead off, a page is in the cache
     only if CMD faulted it (or read() it).  Fault-around never reads: it
     maps pages that are already cached, so the set is exact even where
     fault_around_bytes cannot be set (a kernel in lockdown refuses
     debugfs) -- then "fault_around_bytes" is null and the reason is in
     "fault_around_error"; --require-fault-around makes that an error;
  5. every setting is restored, whatever happened (also on SIGINT/SIGTERM).

Runs are serialised by a lock (/run/pbitmap-ground-truth.lock): two at
once would restore each other's settings in the middle of a measurement.
Readahead and the page cache are global: other work on the machine runs
slower meanwhile, and its reads of the same FILEs would count as CMD's.

--ldd adds CMD's executable and the libraries `ldd` lists for it (ld.so
included).  --require-cold fails when a FILE still had cached pages after
the drop.  Output (stdout, or OUT): one JSON object
  {"command": [...], "exit_status": N, "page_size": 4096,
   "fault_around_bytes": 4096 | null, "fault_around_error": null | "...",
   "files": [{"path": P, "size": BYTES, "cached_before": N,
              "count": N, "pages": [[FIRST, LAST], ...]}, ...]}
with pages as inclusive ranges of page indices (file offset / page size).
Exit status: 0 (CMD's own status is in the JSON), 1 on error, 2 on usage.
Needs root.
"""
import argparse
import ctypes
import ctypes.util
import fcntl
import json
import mmap
import os
import shutil
import signal
import subprocess
import sys

DEBUGFS = "/sys/kernel/debug"
FAULT_AROUND = DEBUGFS + "/fault_around_bytes"
PAGE = os.sysconf("SC_PAGE_SIZE")

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


class Error(Exception):
    pass


def cached_pages(path):
    """Indices of the pages of @path in the page cache (mincore)."""
    size = os.stat(path).st_size
    if size == 0:
        return []
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise Error("%s: mmap: %s" % (path, os.strerror(ctypes.get_errno())))
        try:
            n = (size + PAGE - 1) // PAGE
            vec = ctypes.create_string_buffer(n)
            if libc.mincore(addr, size, vec):
                raise Error("%s: mincore: %s" % (path, os.strerror(ctypes.get_errno())))
            return [i for i in range(n) if vec.raw[i] & 1]
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def ranges(pages):
    out = []
    for p in pages:
        if out and out[-1][1] == p - 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return out


def bdi_of(path):
    """The read_ahead_kb file that governs reads of @path."""
    dev = os.stat(path).st_dev
    majmin = "%d:%d" % (os.major(dev), os.minor(dev))
    block = "/sys/dev/block/" + majmin
    if not os.path.exists(block):
        raise Error("%s: on device %s, which is no block device (tmpfs? btrfs?): "
                    "no readahead setting to turn off, no ground truth" % (path, majmin))
    # A partition reads through its disk's bdi.
    if os.path.exists(block + "/partition"):
        with open(os.path.realpath(block) + "/../dev") as f:
            majmin = f.read().strip()
    ra = "/sys/class/bdi/%s/read_ahead_kb" % majmin
    if not os.path.exists(ra):
        raise Error("%s: no %s" % (path, ra))
    return ra


def ldd_files(cmd):
    exe = shutil.which(cmd)
    if not exe:
        raise Error("%s: not found in PATH" % cmd)
    files = [os.path.realpath(exe)]
    out = subprocess.run(["ldd", exe], capture_output=True, text=True)
    if out.returncode:
        raise Error("ldd %s: %s" % (exe, out.stderr.strip()))
    for line in out.stdout.splitlines():
        for word in line.split():
            if word.startswith("/"):
                files.append(os.path.realpath(word))
    return list(dict.fromkeys(files))


def write(path, value):
    with open(path, "w") as f:
        f.write(value)


def read(path):
    with open(path) as f:
        return f.read().strip()


def on_signal(sig, frame):
    raise KeyboardInterrupt("signal %d" % sig)


def main():
    ap = argparse.ArgumentParser(
        usage="%(prog)s [-o OUT] [--ldd] [--require-fault-around] [--require-cold] "
              "-f FILE... -- CMD [ARG...]")
    ap.add_argument("-f", "--file", action="append", default=[])
    ap.add_argument("-o", "--output")
    ap.add_argument("--ldd", action="store_true")
    ap.add_argument("--require-fault-around", action="store_true")
    ap.add_argument("--require-cold", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no CMD given")
    if os.geteuid():
        raise Error("needs root (drop_caches, read_ahead_kb, debugfs)")
    files = [os.path.realpath(f) for f in args.file]
    if args.ldd:
        files += ldd_files(cmd[0])
    files = list(dict.fromkeys(files))
    if not files:
        ap.error("no FILE given (-f FILE or --ldd)")
    for f in files:
        if not os.path.isfile(f):
            raise Error("%s: not a regular file" % f)

    lock = open("/run/pbitmap-ground-truth.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    restore = []        # (path, old value), undone in reverse order
    unmount = False
    signal.signal(signal.SIGTERM, on_signal)
    try:
        ras = list(dict.fromkeys(bdi_of(f) for f in files))
        for ra in ras:
            restore.append((ra, read(ra)))
            write(ra, "0")
        fault_around, fa_error = None, None
        try:
            if not os.path.exists(FAULT_AROUND):
                subprocess.run(["mount", "-t", "debugfs", "none", DEBUGFS],
                               check=True, capture_output=True)
                unmount = True
            old = read(FAULT_AROUND)
            write(FAULT_AROUND, str(PAGE))
            restore.append((FAULT_AROUND, old))
            fault_around = int(read(FAULT_AROUND))
        except (OSError, subprocess.CalledProcessError) as e:
            fa_error = "cannot set %s: %s" % (FAULT_AROUND, getattr(e, "strerror", None) or e)
            if args.require_fault_around:
                raise Error(fa_error)
        os.sync()
        write("/proc/sys/vm/drop_caches", "3")
        before = {f: len(cached_pages(f)) for f in files}
        if args.require_cold:
            warm = ["%s (%d pages)" % (f, n) for f, n in before.items() if n]
            if warm:
                raise Error("still cached after dropping caches (mapped by a running "
                            "process?): " + ", ".join(warm))
        status = subprocess.run(cmd).returncode
        result = {
            "command": cmd,
            "exit_status": status,
            "page_size": PAGE,
            "fault_around_bytes": fault_around,
            "fault_around_error": fa_error,
            "files": [],
        }
        for f in files:
            pages = cached_pages(f)
            result["files"].append({"path": f, "size": os.stat(f).st_size,
                                    "cached_before": before[f], "count": len(pages),
                                    "pages": ranges(pages)})
    finally:
        for path, old in reversed(restore):
            try:
                write(path, old)
            except OSError as e:
                print("ground_truth: %s: cannot restore '%s': %s" % (path, old, e.strerror),
                      file=sys.stderr)
        if unmount:
            subprocess.run(["umount", DEBUGFS])
    text = json.dumps(result) + "\n"
    if args.output:
        write(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Error as e:
        print("ground_truth: %s" % e, file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("ground_truth: interrupted; settings restored", file=sys.stderr)
        sys.exit(130)
