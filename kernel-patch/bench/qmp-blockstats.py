#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""qmp-blockstats.py: what QEMU counted on a guest disk, from the host.

  qmp-blockstats.py SOCKET DEVICE

Connects to QEMU's QMP socket (kernel-patch/scripts/vm's VM_QMP), runs
query-blockstats and prints DEVICE's read counters on one line:
"RD_OPERATIONS RD_MERGED RD_BYTES".  rd_operations counts every request the
guest's virtio-blk driver issued (QEMU accounts each request of a merged
chain on its own); rd_merged, those virtio-blk merged into a neighbour, so
the block layer and its throttle saw rd_operations - rd_merged.  The
benchmark (bench-run.sh) sets them beside the guest's /sys/block/vdb/stat.  Exit status 0; 1 (with "qmp-blockstats: message") when QEMU cannot
be reached or has no such device.
"""
import json
import socket
import sys

PROG = "qmp-blockstats"


def command(f, sock, name):
    sock.sendall(json.dumps({"execute": name}).encode() + b"\n")
    while True:
        line = f.readline()
        if not line:
            raise OSError("QMP connection closed")
        msg = json.loads(line)
        if "return" in msg:
            return msg["return"]
        if "error" in msg:
            raise OSError(f"{name}: {msg['error'].get('desc', msg['error'])}")
        # anything else is an asynchronous event: skip it


def main(argv):
    if len(argv) != 3:
        print(f"usage: {PROG} SOCKET DEVICE", file=sys.stderr)
        return 2
    path, device = argv[1], argv[2]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(path)
            f = sock.makefile("r")
            if "QMP" not in json.loads(f.readline()):
                raise OSError("not a QMP greeting")
            command(f, sock, "qmp_capabilities")
            for dev in command(f, sock, "query-blockstats"):
                if dev.get("device") == device:
                    s = dev["stats"]
                    print(s["rd_operations"], s["rd_merged"], s["rd_bytes"])
                    return 0
            raise OSError(f"no block device {device!r}")
    except (OSError, ValueError) as e:
        print(f"{PROG}: {path}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
