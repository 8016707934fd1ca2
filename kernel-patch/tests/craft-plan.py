#!/usr/bin/env python3
"""Make variants of a stamped program's start-up plan, for the kernel's plan checks.

  craft-plan.py PROGRAM OUTDIR FIFO DIR DENIED TMPFS_FILE DEVNODE LINK
                              writes OUTDIR/NAME for every case below and prints
                              "NAME EXPECT" lines, EXPECT being what the kernel should
                              count: reject_<reason> (the plan refused at parse,
                              pbitmap_plan_reject_<reason>), skip_<reason> (run, a file
                              skipped, pbitmap_plan_skip_<reason>), or ok (run, nothing
                              skipped)

PROGRAM must carry a plan area holding a plan of at least two files (pbitmap add
--plan-size, pbitmap plan).  FIFO is a named pipe, DIR a directory, DENIED a file
the user who runs the variants cannot reach, TMPFS_FILE a regular file on tmpfs,
a filesystem plans do not read from (its identity is put in the plan), DEVNODE a
device node and LINK a symbolic link to the plan's first file, both on the
program's filesystem.  Only the plan area of the record changes, in both slots,
with the record's CRC recomputed, so that each case reaches the plan check it is meant
for; the program's bytes and its marker stay as they are.  A plan the kernel refuses
leaves the record's bitmap in use, and a file it skips is read at its own mmap: every
variant must run and print what the original prints.
"""
import fcntl
import os
import struct
import sys

from craft import Image  # the .pbitmap section and its slots (craft.py, beside this file)

PLAN = struct.Struct("<IIHHII12s")
FILE = struct.Struct("<QQIIII")
STEP = struct.Struct("<IIHH")
MAGIC = 0x4C504250
F_ORDER = 1  # PBITMAP_PLAN_F_ORDER: an order table follows the steps
FS_IOC_GETVERSION = 0x80087601  # _IOR('v', 1, long)


class Plan:
    """The plan of the current slot, as fields, and its area."""

    def __init__(self, img):
        self.img = img
        self.area_size = struct.unpack_from("<I", img.data, img.rec_off + 88)[0]
        if not self.area_size:
            sys.exit("craft-plan.py: no plan area (pbitmap add --plan-size)")
        self.area_at = [at + img.rec_size - self.area_size for at in img.slots]
        a = bytes(img.data[self.area_at[0]:self.area_at[0] + self.area_size])
        magic, used, nr_files, flags, nr_steps, names_size, _ = PLAN.unpack_from(a, 0)
        if magic != MAGIC or nr_files < 2:
            sys.exit("craft-plan.py: the plan area holds no plan of two files")
        if flags:
            sys.exit("craft-plan.py: a plan with flags %#x (pbitmap plan writes none)" % flags)
        self.files = []
        names_at = PLAN.size + nr_files * FILE.size + nr_steps * STEP.size
        for i in range(nr_files):
            ino, size, dev, gen, name, _ = FILE.unpack_from(a, PLAN.size + i * FILE.size)
            end = a.index(0, names_at + name)
            self.files.append(dict(ino=ino, size=size, dev=dev, gen=gen,
                                   path=a[names_at + name:end].decode()))
        self.steps = []     # (file, start, nr)
        for i in range(nr_steps):
            start, nr, file, _ = STEP.unpack_from(a, PLAN.size + nr_files * FILE.size + i * STEP.size)
            self.steps.append((file, start, nr))

    def pack(self, files=None, steps=None, order=None):
        """A well-formed plan of these files and (file, start, nr) steps; with
        @order (step indices, written as given), flag F_ORDER and that table."""
        files = self.files if files is None else files
        steps = self.steps if steps is None else steps
        names, offsets = b"", []
        for f in files:
            offsets.append(len(names))
            names += f["path"].encode() + b"\0"
        out = bytearray(PLAN.pack(MAGIC, 0, len(files), 0 if order is None else F_ORDER,
                                  len(steps), len(names), bytes(12)))
        for f, off in zip(files, offsets):
            out += FILE.pack(f["ino"], f["size"], f["dev"], f["gen"], off, 0)
        for s in steps:
            out += STEP.pack(s[1], s[2], s[0], 0)
        if order is not None:
            out += struct.pack("<%dH" % len(order), *order)
        out += names
        struct.pack_into("<I", out, 4, len(out))
        return out

    def write(self, raw):
        if len(raw) > self.area_size:
            sys.exit("craft-plan.py: a case does not fit the plan area (%d > %d)"
                     % (len(raw), self.area_size))
        raw = bytes(raw) + bytes(self.area_size - len(raw))
        for at in self.area_at:
            self.img.data[at:at + self.area_size] = raw
        self.img.reseal()


def poke(fmt, off, value):
    """Overwrite one field of the packed plan."""
    def edit(p, raw):
        struct.pack_into(fmt, raw, off(p) if callable(off) else off, value(p) if callable(value) else value)
        return raw
    return edit


def files_at(p):
    return PLAN.size


def steps_at(p):
    return PLAN.size + len(p.files) * FILE.size


def names_at(p):
    return steps_at(p) + len(p.steps) * STEP.size


def with_file(i, **changes):
    def edit(p, raw):
        files = [dict(f) for f in p.files]
        for k, v in changes.items():
            files[i][k] = v(files[i]) if callable(v) else v
        return p.pack(files=files)
    return edit


def with_steps(fn):
    def edit(p, raw):
        return p.pack(steps=fn(p))
    return edit


def with_order(fn):
    """The plan's own files and steps with the order table fn(p)."""
    def edit(p, raw):
        return p.pack(order=fn(p))
    return edit


def raw_edit(fn):
    def edit(p, raw):
        fn(p, raw)
        return raw
    return edit


def identity(path):
    """A file's plan entry, as the tool writes it (generation: FS_IOC_GETVERSION)."""
    st = os.stat(path)
    dev = ((os.major(st.st_dev) << 8) | (os.minor(st.st_dev) & 0xFF) |
           ((os.minor(st.st_dev) & ~0xFF) << 12))
    gen = 0
    try:
        with open(path, "rb") as f:
            buf = bytearray(8)
            fcntl.ioctl(f.fileno(), FS_IOC_GETVERSION, buf)
            gen = struct.unpack_from("<I", buf)[0]
    except OSError:
        pass
    return dict(path=path, ino=st.st_ino, size=st.st_size, dev=dev, gen=gen)


def cases(fifo, directory, denied, tmpfs, devnode, link):
    used = lambda p: len(p.pack())  # noqa: E731
    return [
        ("sound", None, "ok"),
        # The head.
        ("magic", poke("<I", 0, 0x504D4250), "reject_header"),
        ("zero-magic-rest-set", poke("<I", 0, 0), "reject_header"),
        ("used-plus-1", poke("<I", 4, lambda p: used(p) + 1), "reject_header"),
        ("used-minus-1", poke("<I", 4, lambda p: used(p) - 1), "reject_header"),
        ("used-zero", poke("<I", 4, 0), "reject_header"),
        ("used-past-area", poke("<I", 4, lambda p: p.area_size + 8), "reject_header"),
        ("used-max", poke("<I", 4, 0xFFFFFFFF), "reject_header"),
        ("no-files", poke("<H", 8, 0), "reject_header"),
        ("files-plus-1", poke("<H", 8, lambda p: len(p.files) + 1), "reject_header"),
        ("files-1025", poke("<H", 8, 1025), "reject_header"),
        ("files-max", poke("<H", 8, 0xFFFF), "reject_header"),
        # flags: PBITMAP_PLAN_F_ORDER and _META are known (bit 2 is the
        # first that is not); with either and no table, used does not match
        # (a metadata table's own cases: craft-meta.py).
        ("flags-unknown", poke("<H", 10, 4), "reject_header"),
        ("flags-high", poke("<H", 10, 0x8000), "reject_header"),
        ("flags-order-no-table", poke("<H", 10, F_ORDER), "reject_header"),
        ("flags-meta-no-table", poke("<H", 10, 2), "reject_header"),
        ("steps-plus-1", poke("<I", 12, lambda p: len(p.steps) + 1), "reject_header"),
        ("steps-max", poke("<I", 12, 0xFFFFFFFF), "reject_header"),
        ("steps-wrap", poke("<I", 12, 0x15555556), "reject_header"),
        ("names-zero", poke("<I", 16, 0), "reject_header"),
        ("names-minus-1", poke("<I", 16, lambda p: len(p.pack()) - names_at(p) - 1), "reject_header"),
        ("names-max", poke("<I", 16, 0xFFFFFFFF), "reject_header"),
        ("reserved-0", poke("<I", 20, 1), "reject_header"),
        ("reserved-1", poke("<I", 24, 1), "reject_header"),
        ("reserved-2", poke("<I", 28, 0x80000000), "reject_header"),
        ("byte-after-used", raw_edit(lambda p, r: r.extend(b"\x01")), "reject_header"),
        # The file table.
        ("file-reserved", poke("<I", lambda p: files_at(p) + 28, 1), "reject_files"),
        ("file1-reserved", poke("<I", lambda p: files_at(p) + FILE.size + 28, 0xFFFFFFFF),
         "reject_files"),
        # The names.
        ("name-past-names", poke("<I", lambda p: files_at(p) + 24,
                                 lambda p: len(p.pack()) - names_at(p)), "reject_names"),
        ("name-max", poke("<I", lambda p: files_at(p) + 24, 0xFFFFFFFF), "reject_names"),
        ("name-relative", with_file(0, path=lambda f: f["path"][1:]), "reject_names"),
        ("name-mid-path", poke("<I", lambda p: files_at(p) + 24, 1), "reject_names"),
        ("name-unterminated", raw_edit(lambda p, r: r.__setitem__(len(r) - 1, ord("x"))),
         "reject_names"),
        ("name-empty", with_file(1, path=""), "reject_names"),
        ("name-too-long", with_file(1, path="/" + "x" * 4096), "reject_names"),
        # The steps.
        ("step-no-file", poke("<H", lambda p: steps_at(p) + 8, lambda p: len(p.files)),
         "reject_steps"),
        ("step-file-max", poke("<H", lambda p: steps_at(p) + 8, 0xFFFF), "reject_steps"),
        ("step-empty", poke("<I", lambda p: steps_at(p) + 4, 0), "reject_steps"),
        ("step-past-end", with_steps(lambda p: p.steps + [(0, (p.files[0]["size"] + 4095) // 4096, 1)]),
         "reject_steps"),
        ("step-one-too-long", with_steps(lambda p: p.steps + [(0, 0, (p.files[0]["size"] + 4095) // 4096 + 1)]),
         "reject_steps"),
        ("step-wraps", with_steps(lambda p: p.steps + [(0, 0xFFFFFFFF, 0xFFFFFFFF)]), "reject_steps"),
        ("step-reserved", poke("<H", lambda p: steps_at(p) + 10, 1), "reject_steps"),
        # Not canonical: each would make an exec walk pages more than once.
        ("reversed", with_steps(lambda p: list(reversed(p.steps))), "reject_canonical"),
        ("repeated", with_steps(lambda p: p.steps + [p.steps[0]]), "reject_canonical"),
        ("overlapping", with_steps(lambda p: [(0, 0, 2), (0, 1, 2)] + p.steps[1:]),
         "reject_canonical"),
        ("alternating", with_steps(lambda p: [(0, 0, 1), (1, 0, 1), (0, 1, 1)]),
         "reject_canonical"),
        ("same-file-twice", lambda p, raw: p.pack(files=p.files + [p.files[0]],
                                                  steps=p.steps + [(len(p.files), 0, 1)]),
         "reject_canonical"),
        # The same inode under another spelling of its path.
        ("same-inode-two-paths", lambda p, raw: p.pack(
            files=p.files + [dict(p.files[0], path=os.path.dirname(p.files[0]["path"]) + "/./" +
                                  os.path.basename(p.files[0]["path"]))],
            steps=p.steps), "reject_canonical"),
        # The order table: not a permutation of the steps (checked last).
        ("order-repeated", with_order(lambda p: [0] * len(p.steps)), "reject_order"),
        ("order-past-steps", with_order(lambda p: list(range(1, len(p.steps) + 1))),
         "reject_order"),
        ("order-max", with_order(lambda p: [0xFFFF] + list(range(1, len(p.steps)))),
         "reject_order"),
        # Not canonical and a bad table: the canonical form is checked first.
        ("order-and-reversed", lambda p, raw: p.pack(steps=list(reversed(p.steps)),
                                                     order=[0] * len(p.steps)),
         "reject_canonical"),
        # Well-formed, but the path leads elsewhere, or to a file the task may
        # not read: one reason, counted before anything is opened.
        ("ino", with_file(0, ino=lambda f: f["ino"] + 1), "skip_mismatch"),
        ("dev", with_file(0, dev=lambda f: f["dev"] ^ 1), "skip_mismatch"),
        ("generation", with_file(0, gen=lambda f: f["gen"] ^ 1), "skip_mismatch"),
        ("size", with_file(0, size=lambda f: f["size"] + 4096), "skip_mismatch"),
        ("missing", with_file(0, path=lambda f: f["path"] + ".gone"), "skip_mismatch"),
        ("fifo", with_file(0, path=fifo), "skip_mismatch"),
        ("directory", with_file(0, path=directory), "skip_mismatch"),
        ("devnode", with_file(0, path=devnode), "skip_mismatch"),
        # A plan holds d_path() names: the walk follows no symbolic link.
        ("symlink", with_file(0, path=link), "skip_mismatch"),
        ("not-a-dir", with_file(0, path=lambda f: f["path"] + "/x"), "skip_mismatch"),
        # A regular file with its own identity, on a filesystem plans do not read.
        ("tmpfs", with_file(0, **identity(tmpfs)), "skip_fs"),
        # Paths through devtmpfs and procfs: the walk stops at their mounts
        # and looks nothing up in them.
        ("dev-zero", with_file(0, path="/dev/zero"), "skip_fs"),
        ("proc-self-exe", with_file(0, path="/proc/self/exe"), "skip_fs"),
        # The task may not reach it: with another file's identity, with its
        # own, and with its own but a wrong generation (the one field stat()
        # does not show) all count the same, so none tells the generation.
        ("denied", with_file(0, path=denied), "skip_mismatch"),
        ("denied-own-identity", with_file(0, **identity(denied)), "skip_mismatch"),
        ("denied-wrong-generation", with_file(0, **dict(identity(denied),
                                                        gen=identity(denied)["gen"] ^ 1)),
         "skip_mismatch"),
        # The right file, spelled with "..": the walk never goes up.
        ("dot-dot", with_file(0, path=lambda f: os.path.dirname(f["path"]) + "/../" +
                              os.path.basename(os.path.dirname(f["path"])) + "/" +
                              os.path.basename(f["path"])), "skip_mismatch"),
        # Well-formed and reachable.
        ("whole-files", with_steps(lambda p: [(i, 0, (f["size"] + 4095) // 4096)
                                              for i, f in enumerate(p.files)]), "ok"),
        ("no-steps", with_steps(lambda p: []), "ok"),
        ("order-reversed", with_order(lambda p: list(reversed(range(len(p.steps))))), "ok"),
        ("order-identity", with_order(lambda p: list(range(len(p.steps)))), "ok"),
        ("order-no-steps", lambda p, raw: p.pack(steps=[], order=[]), "ok"),
    ]


def main(argv):
    if len(argv) != 9:
        sys.exit(__doc__)
    src, outdir, fifo, directory, denied, tmpfs, devnode, link = argv[1:]
    original = open(src, "rb").read()
    marker = os.getxattr(src, "user.pbitmap")
    os.makedirs(outdir, exist_ok=True)
    for name, edit, expect in cases(fifo, directory, denied, tmpfs, devnode, link):
        img = Image(original)
        p = Plan(img)
        raw = p.pack()
        if edit:
            raw = edit(p, raw)
        p.write(raw)
        path = os.path.join(outdir, name)
        with open(path, "wb") as f:
            f.write(img.data)
        os.chmod(path, 0o755)
        os.setxattr(path, "user.pbitmap", marker)
        print(name, expect)


if __name__ == "__main__":
    main(sys.argv)
