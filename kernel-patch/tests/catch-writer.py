#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""catch-writer.py DAEMON DIR SECONDS READY: kill pbitmapd while its writer writes.

Watches the children of the daemon DAEMON (a pid) for one that holds the
copy of a file it rewrites open: an O_TMPFILE in DIR ("DIR/#N (deleted)"),
or a named copy ending in ".pbitmap-new" where the filesystem has no
O_TMPFILE.  As soon as one does, sends SIGKILL to the daemon and prints
"WRITER COPY".  Exits 1, having killed nothing, if none is seen within
SECONDS.  Creates the file READY when it starts watching.

The children are looked at in a loop of system calls, with no process
started in between: a writer under TCG lives a second or so, and a shell
loop that forks to look at it once missed it (CI of de8359c).
"""
import os
import signal
import sys
import time


def copy_held(pid, prefix):
    """The copy the process @pid holds open in the directory @prefix, or None."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith(prefix + "#") and link.endswith(" (deleted)"):
            return link
        if link.startswith(prefix) and link.endswith(".pbitmap-new"):
            return link
    return None


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return f.read().split()
    except OSError:
        return []


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__.split("\n")[0])
    daemon, prefix = int(argv[1]), os.path.join(argv[2], "")
    deadline = time.monotonic() + float(argv[3])
    with open(argv[4], "w"):
        pass
    while time.monotonic() < deadline:
        for kid in children(daemon):
            copy = copy_held(kid, prefix)
            if copy:
                os.kill(daemon, signal.SIGKILL)
                print(kid, copy)
                return 0
    print(f"catch-writer.py: no child of {daemon} held a copy open in {prefix} "
          f"in {argv[3]} s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
