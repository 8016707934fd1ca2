#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""plan-waits.py WATCHED LEASED CMD...: who an exec makes wait.

Marks WATCHED for fanotify permission events on open (FAN_OPEN_PERM, a
listener that allows every open and notes who made it) and holds a write
lease on LEASED (F_SETLEASE F_WRLCK; an open by anybody else starts
breaking it and sends this process SIGIO), then runs CMD once and prints:

  pid P                 the task that exec'd CMD
  perm_events_exec N    FAN_OPEN_PERM events from P (on WATCHED)
  sigio N               lease breaks started (SIGIO received)
  lease L               the lease held after CMD: wrlck, rdlck or none
  seconds S             how long CMD took

Exits 1 with a message when a mark, the lease or CMD cannot be made.
Run as root (fanotify permission events need CAP_SYS_ADMIN).
"""
import ctypes
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time

FAN_CLOEXEC, FAN_CLASS_CONTENT = 0x1, 0x4
FAN_MARK_ADD, FAN_OPEN_PERM, FAN_ALLOW = 0x1, 0x10000, 0x1
AT_FDCWD = -100
F_SETLEASE, F_GETLEASE = 1024, 1025
EVENT = struct.Struct("=IBBHQii")
LEASES = {fcntl.F_WRLCK: "wrlck", fcntl.F_RDLCK: "rdlck", fcntl.F_UNLCK: "none"}


def fanotify(watched):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64,
                                   ctypes.c_int, ctypes.c_char_p]
    fd = libc.fanotify_init(FAN_CLOEXEC | FAN_CLASS_CONTENT, os.O_RDONLY | os.O_LARGEFILE)
    if fd < 0 or libc.fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD,
                                    watched.encode()):
        sys.exit(f"plan-waits.py: fanotify on {watched}: {os.strerror(ctypes.get_errno())}")
    return fd


def listen(fd, stop, pids):
    """Allow every open; note the pid of each."""
    while not stop.is_set():
        if not select.select([fd], [], [], 0.1)[0]:
            continue
        buf = os.read(fd, 4096)
        at = 0
        while at + EVENT.size <= len(buf):
            length, _, _, _, _, efd, pid = EVENT.unpack_from(buf, at)
            pids.append(pid)
            os.write(fd, struct.pack("=iI", efd, FAN_ALLOW))
            os.close(efd)
            at += length


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    watched, leased, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    sigio = []
    signal.signal(signal.SIGIO, lambda *_: sigio.append(1))
    lease_fd = os.open(leased, os.O_RDONLY)
    try:
        fcntl.fcntl(lease_fd, F_SETLEASE, fcntl.F_WRLCK)
    except OSError as e:
        sys.exit(f"plan-waits.py: write lease on {leased}: {e.strerror}")
    fd, pids, stop = fanotify(watched), [], threading.Event()
    listener = threading.Thread(target=listen, args=(fd, stop, pids))
    listener.start()
    start = time.monotonic()
    try:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        child.wait()
    finally:
        took = time.monotonic() - start
        stop.set()
        listener.join()
    if child.returncode:
        sys.exit(f"plan-waits.py: {cmd[0]} exited {child.returncode}")
    lease = fcntl.fcntl(lease_fd, F_GETLEASE)
    print(f"pid {child.pid}")
    print(f"perm_events_exec {pids.count(child.pid)}")
    print(f"sigio {len(sigio)}")
    print(f"lease {LEASES.get(lease, lease)}")
    print(f"seconds {took:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
