#!/bin/bash
# Guest test: what a plan says never makes an exec pay more than the pages
# it may read.  A user (nobody) owns a program whose plan names two
# 64 MiB files that are all in the page cache; cached pages use no budget
# up, so before plans had a canonical form every step cost a walk of the
# cache over its range, and a crafted plan could repeat that walk thousands of
# times inside one execve.  Variants, each a plan of that program, made as
# its owner could make them (only the plan area changes, resealed):
#   sound        both files once, whole (what `pbitmap plan` writes)
#   repeated     the same whole-file step 2,000 times
#   overlapping  2,000 steps, each from a later start to the end
#   reversed     the same 2,000 steps from the last start to the first
#   alternating  two such files, whole, A B A B ... 1,000 times each
#   entries      500 entries for the one file, its path spelled 500 ways
#                (".", "//", "/./"), one whole-file step each
# Asserted: each crafted plan is refused (pbitmap_plan_reject_canonical 3
# for three copies, pbitmap_plan_exec 0) and its exec takes at most four
# times the sound plan's (medians of the execs of 3 copies, the files
# cached before each; most of an exec's 0.4 s here is timeout's, setpriv's
# and the exec's own, which a loaded host stretches unevenly, and 2,000
# walks of 64 MiB of cache cost far more); the program prints what it should every time.  On a
# kernel with the soft-lockup detector (the debug kernel of make
# vm-debug-check) kernel.watchdog_thresh is 1 s while the plans run, so
# that a walk which does not yield for 2 s is reported, and dmesg must
# gain no "soft lockup"; RCU stall warnings fail the run too (the runner
# fails on any kernel warning in the console log).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=/var/tmp/t-plan-cost
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" && cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
snap() { grep '^pbitmap_plan_' /proc/vmstat >"$1"; }
delta() { echo $(($(awk -v k="$1" '$1 == k { print $2 }' "$3") - $(awk -v k="$1" '$1 == k { print $2 }' "$2"))); }
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

[ -n "$(awk '$1 == "pbitmap_plan_reject_canonical"' /proc/vmstat)" ] ||
	fail "no pbitmap_plan_reject_canonical counter: the kernel does not check the canonical form"
head -c 64M /dev/urandom >a.dat
head -c 64M /dev/urandom >b.dat
chmod 644 a.dat b.dat
printf '#include <stdio.h>\nint main(void) { puts("plan-cost ok"); return 0; }\n' >p.c
gcc -O1 -o prog p.c || fail "cannot build prog"
pbitmap add -q --plan-size 256K prog || fail "cannot stamp prog with a plan area"
pbitmap plan prog "$W/a.dat" "$W/b.dat" 2>/dev/null || fail "pbitmap plan"

python3 - "$HERE" prog "$W" <<'EOF' || fail "cannot craft the plans"
import os, shutil, struct, sys
sys.path.insert(0, sys.argv[1])
from craft import Image

PLAN = struct.Struct("<IIHHII12s")
FILE = struct.Struct("<QQIIII")
STEP = struct.Struct("<IIHH")
prog, w = sys.argv[2], sys.argv[3]
data = open(prog, "rb").read()
marker = os.getxattr(prog, "user.pbitmap")
img0 = Image(data)
area = struct.unpack_from("<I", img0.data, img0.rec_off + 88)[0]
at = img0.slots[0] + img0.rec_size - area
_, _, nr_files, _, nr_steps, _, _ = PLAN.unpack_from(img0.data, at)
files = [FILE.unpack_from(img0.data, at + PLAN.size + i * FILE.size) for i in range(nr_files)]
units = (files[0][1] + 4095) // 4096


def pack(entries, steps):
    """entries: (file tuple, path); steps: (file index, start, nr)."""
    names, offs = b"", []
    for _, path in entries:
        offs.append(len(names))
        names += path.encode() + b"\0"
    out = bytearray(PLAN.pack(0x4C504250, 0, len(entries), 0, len(steps), len(names), bytes(12)))
    for (f, _), off in zip(entries, offs):
        out += FILE.pack(f[0], f[1], f[2], f[3], off, 0)
    for fi, start, nr in steps:
        out += STEP.pack(start, nr, fi, 0)
    out += names
    struct.pack_into("<I", out, 4, len(out))
    return bytes(out)


a, b = (files[0], w + "/a.dat"), (files[1], w + "/b.dat")
step = units // 2000
spellings = [w + "/" + "./" * i + "a.dat" for i in range(250)] + \
            [w.replace("/", "//") + "/" + "./" * i + "a.dat" for i in range(250)]
cases = {
    "sound": pack([a, b], [(0, 0, units), (1, 0, units)]),
    "repeated": pack([a], [(0, 0, units)] * 2000),
    "overlapping": pack([a], [(0, k * step, units - k * step) for k in range(2000)]),
    "reversed": pack([a], [(0, k * step, units - k * step) for k in reversed(range(2000))]),
    "alternating": pack([a, b], [(k % 2, 0, units) for k in range(2000)]),
    "entries": pack([(a[0], p) for p in spellings], [(i, 0, units) for i in range(500)]),
}
for name, raw in cases.items():
    if len(raw) > area:
        sys.exit("%s does not fit the plan area (%d > %d)" % (name, len(raw), area))
    img = Image(data)
    raw += bytes(area - len(raw))
    for s in img.slots:
        o = s + img.rec_size - area
        img.data[o:o + area] = raw
    img.reseal()
    # Three copies, three inodes: each exec parses its own record, and a
    # plan is not followed again within a second of its last exec.
    for k in (1, 2, 3):
        path = "%s.%d" % (name, k)
        with open(path, "wb") as f:
            f.write(img.data)
        os.chmod(path, 0o755)
        shutil.chown(path, 65534, 65534)
        os.setxattr(path, "user.pbitmap", marker)
EOF

thresh=
zgrep -q '^CONFIG_SOFTLOCKUP_DETECTOR=y' /proc/config.gz && thresh=$(cat /proc/sys/kernel/watchdog_thresh)
lockups() { dmesg | grep -c 'soft lockup' || true; }
echo 1 >/proc/sys/vm/pbitmap_enabled
trap 'echo 0 >/proc/sys/vm/pbitmap_enabled; [ -z "$thresh" ] || echo "$thresh" >/proc/sys/kernel/watchdog_thresh' EXIT
[ -z "$thresh" ] || echo 1 >/proc/sys/kernel/watchdog_thresh
l0=$(lockups)
# run NAME: one exec by nobody with both files cached; its wall time in
# microseconds on stdout.
run() {
	local t0 t1 got
	cat a.dat b.dat >/dev/null
	t0=$(date +%s%N)
	got=$(timeout 600 "${NOBODY[@]}" "./$1") || fail "$1: exit status $?"
	t1=$(date +%s%N)
	[ "$got" = "plan-cost ok" ] || fail "$1: printed '$got'"
	echo $(((t1 - t0) / 1000))
}
# three NAME: the median of the execs of its three copies; the counters
# of all three in NAME.s0 and NAME.s1.
three() {
	local a b c
	snap "$1.s0"
	a=$(run "$1.1")
	b=$(run "$1.2")
	c=$(run "$1.3")
	snap "$1.s1"
	printf '%s\n' "$a" "$b" "$c" | sort -n | sed -n 2p
}

sound=$(three sound)
[ "$(delta pbitmap_plan_exec sound.s0 sound.s1)" = 3 ] ||
	fail "the sound plan was not followed at each exec: plan_exec $(delta pbitmap_plan_exec sound.s0 sound.s1)"
echo "sound plan: ${sound} us an exec (median of 3)"
for c in repeated overlapping reversed alternating entries; do
	t=$(three $c)
	r=$(delta pbitmap_plan_reject_canonical $c.s0 $c.s1)
	e=$(delta pbitmap_plan_exec $c.s0 $c.s1)
	echo "$c: ${t} us an exec (median of 3), reject_canonical $r, plan_exec $e"
	[ "$r" = 3 ] && [ "$e" = 0 ] || fail "$c: want each of 3 plans refused as not canonical"
	((t <= 4 * sound)) || fail "$c: an exec took ${t} us, more than four times the sound plan's ${sound} us"
done
if [ -n "$thresh" ]; then
	(($(lockups) == l0)) || fail "soft lockup during the plans: $(dmesg | grep -A5 'soft lockup' | head -n 20)"
	echo "soft-lockup detector on (watchdog_thresh 1 s): nothing reported"
fi
echo "PASS: 5 crafted plans over two cached 64 MiB files refused; none made an exec cost more than twice the sound plan's"
