#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""fuse-count.py MOUNTPOINT LOG: a FUSE filesystem that logs every request.

Mounts, over the raw /dev/fuse protocol (no libfuse: the guest image has
none), a filesystem holding one directory and one 4 KiB file,
MOUNTPOINT/dir/file, and serves it until unmounted.  Every request it
gets is appended to LOG as a line "OPCODE PID NODEID", PID being the
thread the kernel sent it for, so that a test can tell whose look-ups
reached the daemon.  Entries and attributes are never cached
(entry_valid = attr_valid = 0), as on a network filesystem whose server
must be asked: every path walk through the mount asks the daemon again.
"ready" is written to LOG once the mount answers.  Exits 0 when the
filesystem is unmounted, 1 with a message when it cannot mount.
"""
import ctypes
import errno
import os
import stat
import struct
import sys

FUSE_LOOKUP, FUSE_FORGET, FUSE_GETATTR = 1, 2, 3
FUSE_OPEN, FUSE_READ, FUSE_RELEASE, FUSE_GETXATTR = 14, 15, 18, 22
FUSE_FLUSH, FUSE_INIT, FUSE_OPENDIR, FUSE_RELEASEDIR = 25, 26, 27, 29
FUSE_ACCESS, FUSE_INTERRUPT, FUSE_DESTROY, FUSE_BATCH_FORGET = 34, 36, 38, 42
NO_REPLY = (FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_INTERRUPT)
IN_HEADER = struct.Struct("<IIQQIIIHH")
OUT_HEADER = struct.Struct("<IiQ")
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")
ROOT, DIR, FILE = 1, 2, 3
SIZE = 4096
CHILDREN = {(ROOT, b"dir"): DIR, (DIR, b"file"): FILE}


def attr(node):
    mode = stat.S_IFREG | 0o644 if node == FILE else stat.S_IFDIR | 0o755
    size = SIZE if node == FILE else 0
    return ATTR.pack(node, size, (size + 511) // 512, 0, 0, 0, 0, 0, 0,
                     mode, 1 if node == FILE else 2, 0, 0, 0, 4096, 0)


def init_out():
    # major, minor, max_readahead, flags, max_background, congestion
    # threshold, max_write, time_gran, max_pages, map_alignment, flags2,
    # max_stack_depth, unused[6]
    return struct.pack("<IIIIHHIIHHII24x", 7, 31, 128 * 1024, 0, 16, 12,
                       128 * 1024, 1, 32, 0, 0, 0)


def answer(opcode, nodeid, body):
    """(error, payload) for one request; None for none."""
    if opcode in NO_REPLY:
        return None
    if opcode == FUSE_INIT:
        return 0, init_out()
    if opcode == FUSE_LOOKUP:
        child = CHILDREN.get((nodeid, body.split(b"\0", 1)[0]))
        if child is None:
            return -errno.ENOENT, b""
        return 0, struct.pack("<QQQQII", child, 0, 0, 0, 0, 0) + attr(child)
    if opcode == FUSE_GETATTR:
        return 0, struct.pack("<QII", 0, 0, 0) + attr(nodeid)
    if opcode in (FUSE_OPEN, FUSE_OPENDIR):
        return 0, struct.pack("<QIi", 1, 0, 0)
    if opcode == FUSE_READ:
        offset, size = struct.unpack_from("<QQI", body)[1:3]
        return 0, bytes(max(0, min(size, SIZE - offset)))
    if opcode in (FUSE_RELEASE, FUSE_RELEASEDIR, FUSE_FLUSH, FUSE_ACCESS, FUSE_DESTROY):
        return 0, b""
    if opcode == FUSE_GETXATTR:
        return -errno.ENODATA, b""
    return -errno.ENOSYS, b""


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    mountpoint, logname = sys.argv[1], sys.argv[2]
    log = open(logname, "a", buffering=1)
    fd = os.open("/dev/fuse", os.O_RDWR)
    libc = ctypes.CDLL(None, use_errno=True)
    opts = f"fd={fd},rootmode=40755,user_id=0,group_id=0,allow_other".encode()
    if libc.mount(b"fuse-count", mountpoint.encode(), b"fuse", 6, opts):  # MS_NOSUID|MS_NODEV
        err = ctypes.get_errno()
        sys.exit(f"fuse-count.py: mount {mountpoint}: {os.strerror(err)}")
    while True:
        try:
            req = os.read(fd, 1 << 20)
        except OSError as e:
            if e.errno == errno.ENODEV:  # unmounted
                return 0
            if e.errno in (errno.EINTR, errno.ENOENT):  # an interrupted request
                continue
            raise
        _, opcode, unique, nodeid, _, _, pid, _, _ = IN_HEADER.unpack_from(req)
        log.write(f"{opcode} {pid} {nodeid}\n")
        if opcode == FUSE_INIT:
            log.write("ready\n")
        reply = answer(opcode, nodeid, req[IN_HEADER.size:])
        if reply is None:
            continue
        error, payload = reply
        if error:
            payload = b""
        try:
            os.write(fd, OUT_HEADER.pack(OUT_HEADER.size + len(payload), error, unique) + payload)
        except OSError as e:
            if e.errno != errno.ENOENT:  # the request was interrupted meanwhile
                raise


if __name__ == "__main__":
    sys.exit(main())
