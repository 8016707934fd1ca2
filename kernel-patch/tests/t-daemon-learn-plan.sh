#!/bin/bash
# Guest test, on Debian's own 6.12 kernel (no pbitmap patch): pbitmapd
# learns start-up plans (learn.c, learn_plan(); pbitmapd(8), LEARNING).
#
# A stamped copy of cc1 with a 64 KiB plan area, run with two of its
# libraries stamped (copies of libgmp and libmpfr, found through
# LD_LIBRARY_PATH), the others not; learned from its second run:
#   - the learned generation comes with a plan (learn_plans +1, "learned
#     plan" in the log; show, show --json and verify agree): every library
#     ldd lists for it, ld.so among them, each once; never cc1 itself;
#     each entry's device, inode and size those of the file now at its
#     path; the first entry ld.so, the first file a dynamic program faults
#     on (it starts at ld.so's entry, before it touches the program) where
#     any other order (by path, by inode) puts another first;
#   - a stamped library is planned where its bitmap marks after this
#     run's generation (written before the program: before it, a freshly
#     stamped library marks nothing); an unstamped file in whole 64 KiB
#     windows, but at its end;
#   - a copy with a plan area too small (1 KiB) and a plan of one file:
#     its generation is written, learn_skip_plan +1, the old plan stays;
#   - with PBITMAP_DAEMON_LEARN_PLANS=no a third copy is learned with no
#     plan (learn_plans +0);
#   - a cold start (drop_caches) read ahead by the daemon (learning off)
#     follows the learned plan (plans +1, no file skipped: every entry
#     matches), prints what it printed, and takes fewer major faults than
#     an unstamped copy's cold start.  Printed: major faults and read
#     requests of the three.
set -euo pipefail
W=/var/tmp/t-daemon-learn-plan
source "$(dirname "$0")/daemonlib.sh"
[ -e /sys/kernel/btf/vmlinux ] || fail "$(uname -r) has no BTF: learning cannot load"
t0=$(date +%s)

trap 'stop_daemon' EXIT
# FILE's show --json, in $W/FILE's base name.json
json() { pbitmap show --json "$1" >"$W/${1##*/}.json" || fail "pbitmap show --json $1"; }
runs() { json "$1"; python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["runs"])' "$W/${1##*/}.json"; }
export LD_LIBRARY_PATH=$W/lib
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; ./"$1" -quiet -O2 x.c -o "$1.$2.s"; }
# PROGRAM's record read by the daemon, which from then on learns root's runs
# of it; this run, nobody's, is not learned (the owner's runs only), though
# the record may be read before its exec is through (a cold exec waits for
# ld.so's first page)
policy() {
	local p0
	p0=$(counter prefetched)
	"${NOBODY[@]}" ./"$1" -quiet -O2 x.c -o /dev/null || fail "$1, run by nobody"
	settle prefetched $((p0 + 1))
}

printf 'int square(int x) { return x * x; }\n' >x.c
CC1=$(gcc -print-prog-name=cc1)
mkdir lib
for l in libgmp libmpfr; do
	f=$(ldd "$CC1" | awk -v l="$l" 'index($1, l) == 1 { print $3 }')
	[ -f "$f" ] || fail "cc1 maps no $l: $(ldd "$CC1")"
	cp "$(readlink -f "$f")" "lib/$(basename "$f")"
done
for c in cc1 cc1s cc1n cc1p; do cp "$CC1" "$c"; done
pbitmap add -q --plan-size 64K cc1 cc1n && pbitmap add -q --plan-size 1K cc1s &&
	pbitmap add -q lib/* || fail "cannot stamp the copies"
pbitmap plan cc1s "$W/x.c" || fail "cannot write cc1s's plan"
json cc1s
cp cc1s.json cc1s.before.json
# what cc1 maps: its interpreter and its libraries, as ld.so finds them here
interp=$(readlink -f "$(ldd ./cc1 | awk '$1 ~ /^\// && $2 ~ /^\(/ { print $1 }')")
ldd ./cc1 | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | xargs readlink -f >maps.list
[ -f "$interp" ] && grep -q "^$W/lib/libgmp" maps.list && (($(wc -l <maps.list) >= 5)) ||
	fail "cc1's interpreter '$interp' and libraries: $(tr '\n' ' ' <maps.list)"
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN_INTERVAL_S=0\n' >plans.conf
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN_INTERVAL_S=0\nPBITMAP_DAEMON_LEARN_PLANS=no\n' >noplans.conf
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\n' >no.conf

# ---- learned: cc1 (64 KiB area), cc1s (1 KiB) ---------------------------------
start_daemon plans.conf -v
[ "$(counter learning)" = 1 ] || fail "learning is not on ($(counter learning)): $(cat daemon.log)"
policy cc1 && policy cc1s
w0=$(counter learn_written)
cold cc1 1
settle learn_written $((w0 + 3))	# cc1, libgmp, libmpfr
for l in lib/*; do json "$l"; done	# their bitmaps as cc1's plan took them
cold cc1s 1
settle learn_written $((w0 + 6))
lp=$(counter learn_plans) ls=$(counter learn_skip_plan)
stop_daemon
[ "$lp" = 1 ] && [ "$ls" = 1 ] ||
	fail "learn_plans $lp, learn_skip_plan $ls: wanted 1 (cc1) and 1 (cc1s, its area too small)"
[ "$(runs cc1)" = 1 ] && [ "$(runs cc1s)" = 1 ] ||
	fail "one learned run each: cc1 has $(runs cc1) generations, cc1s $(runs cc1s)"
grep -q "cc1: learned plan: [0-9]* files, [0-9]* KiB" daemon.log || fail "no 'learned plan' in the log"
grep -q "cc1s: the plan takes [0-9]* bytes, its area has 1024" daemon.log ||
	fail "cc1s: the log does not say why its plan was not written"
pbitmap verify cc1 >verify.out || fail "cc1 with its learned plan does not verify: $(cat verify.out)"
grep -q "plan" verify.out || fail "verify says nothing of cc1's plan: $(cat verify.out)"
pbitmap show cc1 >show.out || fail "pbitmap show cc1"
grep -Eq "^  plan +[0-9]+ files" show.out || fail "show: no plan in $(cat show.out)"
pbitmap verify -q cc1s lib/* || fail "a learned record does not verify"
json cc1s
python3 - cc1s.before.json cc1s.json <<'EOF' || fail "cc1s: its old plan did not stay"
import json, sys
a, b = (json.load(open(p))[0] for p in sys.argv[1:])
ok = a["plan"] == b["plan"] and [f["path"] for f in b["plan"]["files"]] == ["/var/tmp/t-daemon-learn-plan/x.c"]
sys.exit(0 if ok else 1)
EOF
json cc1
# the plan, checked against the files as they are now
python3 - "$W" "$interp" <<'EOF' >plan.check || fail "cc1's learned plan: $(cat plan.check)"
import glob, json, os, sys
w, interp = sys.argv[1:3]
rec = json.load(open(f"{w}/cc1.json"))[0]
plan = rec.get("plan")
if not plan:
    sys.exit("no plan in show --json")
files, steps = plan["files"], plan["steps"]
paths = [f["path"] for f in files]
bad = []
if plan["order"] is not None:
    bad.append("an order table")
if paths[0] != interp:
    bad.append(f"first {paths[0]}, not ld.so ({interp})")
if len(set(paths)) != len(paths) or len({(f["dev"], f["ino"]) for f in files}) != len(files):
    bad.append("a file twice")
prog = os.stat(f"{w}/cc1")
for f in files:
    st = os.stat(f["path"])
    if f["path"] == f"{w}/cc1" or (st.st_dev, st.st_ino) == (prog.st_dev, prog.st_ino):
        bad.append("cc1 itself")
    if (f["dev"], f["ino"], f["size"]) != (st.st_dev, st.st_ino, st.st_size) or f["state"] != "current":
        bad.append(f"{f['path']}: not the file at its path ({f['state']})")
missing = [p for p in open(f"{w}/maps.list").read().split() if p not in paths]
if missing:
    bad.append(f"libraries not planned: {missing}")
stamped = {p: json.load(open(f"{w}/{os.path.basename(p)}.json"))[0] for p in glob.glob(f"{w}/lib/*")}
windows = 0
for i, p in enumerate(paths):
    mine = [(s[1], s[2]) for s in steps if s[0] == i]
    if not mine:
        bad.append(f"{p}: no range")
    if p in stamped:
        marks = [(a, b - a + 1) for a, b in stamped[p]["prefetch"]["ranges"]]
        if not marks or mine != marks:
            bad.append(f"{p}: ranges {mine[:4]}..., its bitmap marks {marks[:4]}...")
        continue
    end = (files[i]["size"] + 4095) // 4096
    for start, nr in mine:
        if start % 16 or ((start + nr) % 16 and start + nr != end):
            bad.append(f"{p}: range {start}+{nr} is not whole 64 KiB windows (end {end})")
    windows += len(mine)
if bad:
    sys.exit("; ".join(bad))
kib = sum(s[2] for s in steps) * 4
print(f"{len(files)} files, {len(steps)} ranges, {kib} KiB, {plan['used']} bytes;"
      f" {windows} ranges of unstamped files in 64 KiB windows; first {paths[0]}")
EOF
echo "learned: cc1's plan: $(cat plan.check) ($(grep -o "cc1: learned plan: .*" daemon.log))"
echo "too small: cc1s learned (generation 1), learn_skip_plan +1, its old plan kept"

# ---- PBITMAP_DAEMON_LEARN_PLANS=no -----------------------------------------------
start_daemon noplans.conf -v
policy cc1n
w0=$(counter learn_written)
cold cc1n 1
settle learn_written $((w0 + 3))
lp=$(counter learn_plans)
stop_daemon
json cc1n
[ "$(runs cc1n)" = 1 ] || fail "LEARN_PLANS=no: cc1n has $(runs cc1n) generations, wanted 1"
[ "$lp" = 0 ] && ! grep -q '"plan":' cc1n.json && ! grep -q "cc1n: learned plan" daemon.log ||
	fail "LEARN_PLANS=no: a plan was written (learn_plans $lp): $(grep -o '"plan":.\{80\}' cc1n.json)"
echo "LEARN_PLANS=no: cc1n learned (generation 1), no plan"

# ---- a cold start from the learned plan ----------------------------------------
start_daemon no.conf
for p in cc1p cc1n cc1; do
	e0=$(counter execs) p0=$(counter plans) m0=$(counter skip_mismatch)
	sync; echo 3 >/proc/sys/vm/drop_caches
	read -r r0 _ </sys/block/vda/stat
	/usr/bin/time -f %F -o "maj.$p" ./"$p" -quiet -O2 x.c -o "$p.cold.s"
	read -r r1 _ </sys/block/vda/stat
	settle execs $((e0 + 2))	# time, cc1
	echo "$(tail -n 1 "maj.$p") $((r1 - r0)) $(($(counter plans) - p0)) $(($(counter skip_mismatch) - m0))" >"res.$p"
	sleep 2.5	# the daemon reads a file once in 2 s
done
stop_daemon
read -r mp rp _ _ <res.cc1p; read -r mn rn pn _ <res.cc1n; read -r md rd pd sd <res.cc1
echo "cold cc1 under pbitmapd: unstamped $mp major faults, $rp read requests; learned, no plan" \
	"$mn, $rn; learned with its plan $md, $rd"
[ "$pd" = 1 ] && [ "$sd" = 0 ] || fail "the cold start did not follow the plan: plans +$pd, skip_mismatch +$sd"
[ "$pn" = 0 ] || fail "cc1n, which has no plan, was read through one (plans +$pn)"
cmp -s cc1.cold.s cc1.1.s && cmp -s cc1.cold.s cc1p.cold.s || fail "cc1's output changed"
[ "$md" -lt "$mp" ] || fail "the learned plan cut no major fault ($mp -> $md)"
echo "PASS: pbitmapd learns start-up plans on $(uname -r) ($(($(date +%s) - t0)) s)"
