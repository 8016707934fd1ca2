#!/usr/bin/python3
"""race_poll.py PID PATH SECONDS: wait until a process under PID (PID
itself or a descendant) is in statx() on a descriptor that names PATH, stop
it (SIGSTOP) and print its pid; exit 1 after SECONDS.  t-daemon-mount-race.sh
runs pbitmapd under strace with every statx() held on its way out: the stop
is taken before that statx() returns, so the test mounts over PATH and
sends SIGCONT with the reader still between its check and its open."""
import os
import signal
import sys
import time

SYS_STATX = 332  # x86_64


def tree(pid):
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return seen


def in_statx_on(pid, path):
    try:
        with open(f"/proc/{pid}/syscall") as f:
            fields = f.read().split()
        if not fields or fields[0] != str(SYS_STATX):
            return False
        fd = int(fields[1], 16) & 0xffffffff
        return os.readlink(f"/proc/{pid}/fd/{fd}") == path
    except (OSError, ValueError, IndexError):
        return False


def main():
    if os.uname().machine != "x86_64":
        print(f"statx() is syscall {SYS_STATX} on x86_64 only, not on {os.uname().machine}")
        return 2
    pid, path, limit = int(sys.argv[1]), os.path.realpath(sys.argv[2]), float(sys.argv[3])
    end = time.monotonic() + limit
    while time.monotonic() < end:
        for p in tree(pid):
            if in_statx_on(p, path):
                os.kill(p, signal.SIGSTOP)
                print(p)
                return 0
        time.sleep(0.002)
    print(f"no process under {pid} was in statx() on {path} in {limit} s")
    return 1


sys.exit(main())
