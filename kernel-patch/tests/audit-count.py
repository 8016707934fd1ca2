#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""audit-count.py EXE CMD...: the PATH records of one execve event.

Becomes the audit daemon over netlink (AUDIT_SET: enabled, this pid),
loads the rule `-a always,exit -F arch=b64 -S execve`, runs CMD, and
prints the number of PATH records (type 1302) of the execve event whose
SYSCALL record names EXE as its exe=, then removes the rule and gives the
daemon role back.  No auditd or auditctl needed: the guest image has
neither.  Fails (exit 1, a message) when no such event arrives.
"""
import os
import re
import select
import socket
import struct
import subprocess
import sys
import time

NETLINK_AUDIT = 9
NLMSG_ERROR = 2
AUDIT_SET = 1001
AUDIT_ADD_RULE, AUDIT_DEL_RULE = 1011, 1012
AUDIT_SYSCALL, AUDIT_PATH, AUDIT_EOE = 1300, 1302, 1320
NLM_F_REQUEST, NLM_F_ACK = 1, 4
AUDIT_STATUS_ENABLED, AUDIT_STATUS_PID = 1, 4
AUDIT_FILTER_EXIT, AUDIT_ALWAYS = 4, 2
AUDIT_ARCH, AUDIT_EQUAL, AUDIT_ARCH_X86_64 = 11, 0x40000000, 0xC000003E
NR_EXECVE = 59
NLMSG = struct.Struct("=IHHII")


def rule():
    """struct audit_rule_data: always, exit filter, execve, arch b64."""
    mask = [0] * 64
    mask[NR_EXECVE // 32] |= 1 << (NR_EXECVE % 32)
    fields, values, flags = [0] * 64, [0] * 64, [0] * 64
    fields[0], values[0], flags[0] = AUDIT_ARCH, AUDIT_ARCH_X86_64, AUDIT_EQUAL
    return struct.pack("=III64I64I64I64II", AUDIT_FILTER_EXIT, AUDIT_ALWAYS, 1,
                       *mask, *fields, *values, *flags, 0)


class Audit:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind((0, 0))
        self.seq = 0

    def request(self, kind, payload):
        """Send, and wait for the kernel's acknowledgement."""
        self.seq += 1
        msg = NLMSG.pack(NLMSG.size + len(payload), kind, NLM_F_REQUEST | NLM_F_ACK,
                         self.seq, 0) + payload
        self.sock.send(msg)
        deadline = time.time() + 5
        while time.time() < deadline:
            for typ, seq, body in self.receive(1.0):
                if typ == NLMSG_ERROR and seq == self.seq:
                    err = struct.unpack_from("=i", body)[0]
                    if err:
                        raise OSError(-err, "audit request %d: %s" % (kind, os.strerror(-err)))
                    return
        raise TimeoutError("audit request %d: no acknowledgement" % kind)

    def receive(self, timeout):
        """(type, seq, payload) of what arrives within timeout seconds.

        One message per datagram: the kernel sends each record in its own,
        and sets a record's nlmsg_len to its payload alone (what auditd
        expects), so the payload is the rest of the datagram.
        """
        out = []
        while select.select([self.sock], [], [], timeout)[0]:
            data = self.sock.recv(1 << 16)
            if len(data) >= NLMSG.size:
                _, typ, _, seq, _ = NLMSG.unpack_from(data)
                out.append((typ, seq, data[NLMSG.size:]))
            timeout = 0
        return out

    def status(self, enabled, pid):
        self.request(AUDIT_SET, struct.pack("=8I", AUDIT_STATUS_ENABLED | AUDIT_STATUS_PID,
                                            enabled, 0, pid, 0, 0, 0, 0))


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: audit-count.py EXE CMD...")
    exe, cmd = sys.argv[1], sys.argv[2:]
    a = Audit()
    a.status(1, os.getpid())
    a.request(AUDIT_ADD_RULE, rule())
    serial_re = re.compile(rb"audit\(\d+\.\d+:(\d+)\)")
    events = {}
    try:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        target, end = None, None
        while target is None:
            if end is None and child.poll() is not None:
                end = time.time() + 15
            if end is not None and time.time() > end:
                break
            for typ, _, body in a.receive(0.5):
                if os.environ.get("AUDIT_COUNT_DEBUG"):
                    print("audit-count.py: %d %s" % (typ, body[:300]), file=sys.stderr)
                m = serial_re.search(body)
                if not m:
                    continue
                ev = events.setdefault(m.group(1), {"exe": None, "paths": 0})
                if typ == AUDIT_SYSCALL:
                    e = re.search(rb' exe="([^"]*)"', body)
                    ev["exe"] = e.group(1).decode() if e else None
                elif typ == AUDIT_PATH:
                    ev["paths"] += 1
                elif typ == AUDIT_EOE and ev["exe"] == exe:
                    target = ev
        if child.wait() != 0:
            sys.exit("audit-count.py: %s exited with %d" % (cmd[0], child.returncode))
    finally:
        a.request(AUDIT_DEL_RULE, rule())
        a.status(0, 0)
    if target is None:
        sys.exit("audit-count.py: no execve event with exe=%s among %d events" % (exe, len(events)))
    print(target["paths"])


if __name__ == "__main__":
    main()
