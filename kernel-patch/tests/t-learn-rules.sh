#!/bin/bash
# Guest test: the rules a learned write is held to and what learning costs
# others (mm/pbitmap/learn.c, writeback.c; Documentation/mm/pbitmap.rst,
# "Learning").  Every file is a private copy stamped here; each section
# fails on a kernel without the rule it checks.
#
#   setid:     vm.pbitmap_learn=2; nobody maps a copy stamped --learn=every
#              and made set-uid-root, and touches its pages: the file stays
#              byte-identical (pbitmap_learn_skip_setid); root's mapping of
#              it is learned.
#   landlock:  a learner under a Landlock ruleset that denies writing files
#              runs its own stamped copy: nothing written
#              (pbitmap_learn_skip_denied); the same run unconfined is.
#   notify:    a learned write is seen by an inotify watcher (IN_MODIFY),
#              moves ctime and the inode's i_version (debugfs), keeps mtime.
#   identity:  learn=1; a process maps two stamped data files as root,
#              drops to nobody, then touches them: nobody's file is
#              learned, root's is not.
#   every run: learn=2; nobody's run of a root-owned program stamped
#              --learn=every is learned; of one stamped with the default
#              policy (the owner's runs) it is not: the sysctl bounds the
#              file's policy; a root-owned data file stamped --learn=every
#              that nobody may not write is not learned from nobody's run.
#   windows:   two learners of one file, the second started 0.5 s after the
#              first, which exits before the second touches its pages: one
#              generation with both learners' pages.
#   no cost:   learn=1; while a root learner's set on a stamped private
#              libc exists, nobody runs /bin/true 300 times on it: the
#              median minor faults per exec within 5% of the same loop with
#              learning off.
#   pinned:    a loop-mounted ext4; a learner maps a stamped copy there,
#              touches it, unmaps and closes it and stays in its window
#              with its cwd elsewhere: umount succeeds at once, and right
#              after it the loop device is unbound and opens O_EXCL (the
#              set held the mount: pbitmap_umount() dropped it); a stamped
#              file deleted meanwhile gives its blocks back at once; no
#              "Busy inodes" message.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/testbed-lib.sh
. "$HERE/testbed-lib.sh"
cold_begin t-learn-rules
VM=/proc/sys/vm
trap 'learn_reset; cold_reset; tb_cleanup; cd /; rm -rf "$W"' EXIT
cold_need_sysctls pbitmap_enabled pbitmap_learn pbitmap_learn_window_ms \
	pbitmap_learn_interval_s pbitmap_learn_data_interval_s pbitmap_learn_flush
cold_need_counters pbitmap_learn_written pbitmap_learn_sets pbitmap_learn_skip_setid \
	pbitmap_learn_skip_denied pbitmap_learn_skip_owner
cold_missing
command -v debugfs >/dev/null || fail "no debugfs in the guest (e2fsprogs): cannot read i_version"

# count_in FILE FIRST N: how many of pages FIRST..FIRST+N-1 the newest generation has.
count_in() {
	pbitmap show --json "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
a, n = int(sys.argv[1]), int(sys.argv[2])
newest = [p for p in r["planes"] if p["age"] == 0][0]
print(sum(1 for lo, hi in newest["ranges"] for p in range(lo, hi + 1) if a <= p < a + n))' "$2" "$3"
}
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# touch_map FILE...: map each file and read one byte of every page (also
# as another user: a script, not a function).
cat >touch-map.py <<'PY'
import mmap, sys
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        sum(m[i] for i in range(0, len(m), 4096))
        m.close()
PY
touch_map() { python3 "$W/touch-map.py" "$@" || fail "cannot map and read $*"; }
times_ns() { python3 -c 'import os, sys; s = os.stat(sys.argv[1]); print(s.st_mtime_ns, s.st_ctime_ns)' "$1"; }
datafile() { head -c 4M /dev/urandom >"$1" && pbitmap add -q "$1" || fail "cannot make the data file $1"; }

gcc -std=c11 -O2 -Wall -Wextra -Werror -o learn-pages "$HERE/learn-pages.c" ||
	fail "cannot build learn-pages"
gcc -std=c11 -O2 -Wall -Wextra -Werror -o landlock-exec "$HERE/landlock-exec.c" ||
	fail "cannot build landlock-exec"
FIRST=$(./learn-pages 0 | sed -n 's/^first=\([0-9]*\) .*/\1/p')
[ -n "$FIRST" ] || fail "learn-pages did not say where its array is"
A=$FIRST B=$((FIRST + 128))
chmod 755 "$W"
echo 1 >$VM/pbitmap_enabled
echo 0 >$VM/pbitmap_learn_interval_s
echo 0 >$VM/pbitmap_learn_data_interval_s

# ---- setid ----
echo 2 >$VM/pbitmap_learn
cp learn-pages lp-suid && pbitmap add -q --learn=every lp-suid && chmod 4755 lp-suid
sum0=$(sha256sum <lp-suid)
s0=$(vmstat_counter pbitmap_learn_skip_setid)
"${NOBODY[@]}" python3 touch-map.py lp-suid || fail "setid: nobody cannot map lp-suid"
learn_flush
[ "$(sha256sum <lp-suid)" = "$sum0" ] ||
	fail "setid: nobody's mapping wrote its faults into a set-uid-root file (learn=2)"
[ "$(vmstat_delta pbitmap_learn_skip_setid "$s0")" -gt 0 ] || fail "setid: pbitmap_learn_skip_setid did not grow"
touch_map lp-suid
learn_flush
[ "$(runs_of lp-suid)" = 1 ] || fail "setid: the owner's (root's) mapping was not learned"
echo "setid: nobody's mapping of the set-uid copy left it byte-identical (skip_setid +$(vmstat_delta pbitmap_learn_skip_setid "$s0")); root's was learned"

# ---- landlock ----
echo 1 >$VM/pbitmap_learn
cp learn-pages lp-ll && pbitmap add -q lp-ll
sum0=$(sha256sum <lp-ll)
d0=$(vmstat_counter pbitmap_learn_skip_denied)
./landlock-exec ./lp-ll A >/dev/null || fail "landlock: the confined run failed"
learn_flush
[ "$(sha256sum <lp-ll)" = "$sum0" ] ||
	fail "landlock: a learner that may not write files had its faults written into its file"
[ "$(vmstat_delta pbitmap_learn_skip_denied "$d0")" -gt 0 ] || fail "landlock: pbitmap_learn_skip_denied did not grow"
./lp-ll A >/dev/null
learn_flush
[ "$(runs_of lp-ll)" = 1 ] || fail "landlock: the same run unconfined was not learned"
echo "landlock: the confined learner's file is byte-identical (skip_denied +$(vmstat_delta pbitmap_learn_skip_denied "$d0")); unconfined, learned"

# ---- notify ----
cp learn-pages lp-ev && pbitmap add -q lp-ev && sync
dev=$(findmnt -no SOURCE -T lp-ev)
ino=$(stat -c %i lp-ev)
iversion() {
	debugfs -R "stat <$ino>" "$dev" 2>/dev/null |
		sed -n 's/.*Version: *\(0x[0-9a-f]*:[0-9a-f]*\).*/\1/p'
}
v0=$(iversion)
[ -n "$v0" ] || fail "notify: debugfs shows no Version for inode $ino on $dev"
read -r m0 c0 < <(times_ns lp-ev)
rm -f events
python3 - lp-ev events <<'PY' &
import ctypes, os, select, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
IN_MODIFY, IN_ATTRIB = 0x2, 0x4
fd = libc.inotify_init1(os.O_NONBLOCK)
if fd < 0 or libc.inotify_add_watch(fd, sys.argv[1].encode(), IN_MODIFY | IN_ATTRIB) < 0:
    sys.exit("inotify: " + os.strerror(ctypes.get_errno()))
open(sys.argv[2] + ".ready", "w").close()
seen = []
while select.select([fd], [], [], 30)[0]:
    buf = os.read(fd, 4096)
    while buf:
        wd, mask, cookie, n = struct.unpack_from("iIII", buf)
        seen.append("IN_MODIFY" if mask & IN_MODIFY else "IN_ATTRIB" if mask & IN_ATTRIB else hex(mask))
        buf = buf[16 + n:]
    if "IN_MODIFY" in seen:
        break
open(sys.argv[2], "w").write(" ".join(seen) + "\n")
PY
watcher=$!
for _ in $(seq 600); do [ -e events.ready ] && break; sleep 0.1; done
[ -e events.ready ] || fail "notify: the inotify watcher did not start within 60 s"
./lp-ev A >/dev/null
learn_flush
wait "$watcher" || fail "notify: the inotify watcher failed"
[ "$(runs_of lp-ev)" = 1 ] || fail "notify: the run was not learned"
read -r m1 c1 < <(times_ns lp-ev)
v1=$(iversion)
echo "notify: inotify saw: $(cat events); mtime $m0 -> $m1; ctime $c0 -> $c1; i_version $v0 -> $v1"
grep -qw IN_MODIFY events || fail "notify: no IN_MODIFY for the learned write"
[ "$c1" != "$c0" ] || fail "notify: ctime did not move"
[ "$m1" = "$m0" ] || fail "notify: mtime moved"
[ "$v1" != "$v0" ] || fail "notify: i_version did not move"

# ---- identity ----
datafile d-nobody && chown 65534:65534 d-nobody
datafile d-root
python3 - <<'PY' || fail "identity: the dropping process failed"
import mmap, os
files = [open(p, "rb") for p in ("d-nobody", "d-root")]
maps = [mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) for f in files]
os.setgroups([])
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
for m in maps:
    sum(m[i] for i in range(0, len(m), 4096))
PY
learn_flush
rn=$(runs_of d-nobody) rr=$(runs_of d-root)
echo "identity: mapped as root, touched as nobody: nobody's file runs=$rn, root's file runs=$rr"
[ "$rn" = 1 ] || fail "identity: nobody's file, touched as nobody, was not learned"
[ "$rr" = 0 ] || fail "identity: root's file was learned from faults taken as nobody"

# ---- every run ----
echo 2 >$VM/pbitmap_learn
cp learn-pages lp-every && pbitmap add -q --learn=every lp-every
cp learn-pages lp-owner && pbitmap add -q lp-owner
"${NOBODY[@]}" ./lp-every A >/dev/null || fail "every run: nobody's run failed"
o0=$(vmstat_counter pbitmap_learn_skip_owner)
"${NOBODY[@]}" ./lp-owner A >/dev/null || fail "every run: nobody's run failed"
datafile d-ro && pbitmap add -q --learn=every d-ro
"${NOBODY[@]}" python3 touch-map.py d-ro || fail "every run: nobody cannot map d-ro"
learn_flush
[ "$(runs_of lp-every)" = 1 ] || fail "every run: nobody's run of a root-owned program stamped --learn=every was not learned under learn=2"
[ "$(runs_of lp-owner)" = 0 ] || fail "every run: nobody's run was learned into a program whose policy is the owner's runs"
[ "$(runs_of d-ro)" = 0 ] || fail "every run: a data file nobody may not write was learned from nobody's run"
echo "every run: nobody's run of the --learn=every program learned; of the owner-policy program not; the data file nobody may not write not (skip_owner +$(vmstat_delta pbitmap_learn_skip_owner "$o0"))"

# ---- windows ----
echo 1 >$VM/pbitmap_learn
# The second joins the first's set while the first sleeps (2.5 s of margin
# for its exec: with 1 s, a slow guest's second learner could come after
# the first had exited and its set was written), and touches B after the
# first has exited, inside the window.
echo 10000 >$VM/pbitmap_learn_window_ms
cp learn-pages lp-two && pbitmap add -q lp-two
./lp-two a 3000 >/dev/null &
first=$!
sleep 0.5
./lp-two b 4000 >/dev/null &
second=$!
wait "$first" "$second" || fail "windows: a learner failed"
for _ in $(seq 30); do [ "$(runs_of lp-two)" -ge 1 ] && break; sleep 0.2; done
learn_flush
echo 10000 >$VM/pbitmap_learn_window_ms
na=$(count_in lp-two "$A" 64) nb=$(count_in lp-two "$B" 64) runs=$(runs_of lp-two)
echo "windows: $runs generation(s); the newest has $na of the first learner's 64 pages and $nb of the second's"
[ "$runs" = 1 ] && [ "$na" = 64 ] && [ "$nb" = 64 ] ||
	fail "windows: expected one generation with both learners' pages"

# ---- no cost ----
mkdir libs && chmod 755 libs
libc=$(ldd /bin/true | awk '$1 ~ /^libc\.so/ { print $3 }')
[ -f "$libc" ] || fail "no cost: cannot find /bin/true's libc"
cp "$libc" libs/ && pbitmap add -q "libs/${libc##*/}" || fail "no cost: cannot stamp a copy of libc"
echo 60000 >$VM/pbitmap_learn_window_ms
s0=$(vmstat_counter pbitmap_learn_sets)
env LD_LIBRARY_PATH="$W/libs" sleep 600 &
learner=$!
tb_defer "kill $learner"
# Until it has mapped the copy (a fixed second raced its exec under TCG).
vmstat_grew pbitmap_learn_sets "$s0" 30 || fail "no cost: root's run made no learned set on the libc copy within 30 s"
# minflt: the median of nobody's 300 execs of /bin/true, each its own
# minor-fault count (wait4). A total over the loop wandered by 4-5% between
# identical loops (placement of the stack and mappings under ASLR); the
# median per exec does not.
minflt() {
	setpriv --reuid=65534 --regid=65534 --clear-groups env -i LD_LIBRARY_PATH="$W/libs" PATH=/usr/bin:/bin \
		python3 - <<'PY'
import os, statistics
faults = []
for _ in range(300):
    pid = os.fork()
    if pid == 0:
        try:
            os.execv("/bin/true", ["/bin/true"])
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("/bin/true failed")
    faults.append(usage.ru_minflt)
print(int(statistics.median(faults)))
PY
}
on=$(minflt) || fail "no cost: the loop failed"
kill -0 "$learner" 2>/dev/null || fail "no cost: the learner was gone before the loop ended"
kill "$learner" 2>/dev/null || true
wait "$learner" 2>/dev/null || true
echo 0 >$VM/pbitmap_learn
off=$(minflt) || fail "no cost: the loop failed"
echo 1 >$VM/pbitmap_learn
echo 10000 >$VM/pbitmap_learn_window_ms
echo "no cost: nobody's 300 execs of /bin/true: median $on minor faults each beside root's learned set, $off with learning off"
python3 -c 'import sys; on, off = map(int, sys.argv[1:]); sys.exit(abs(on - off) > 0.05 * off)' "$on" "$off" ||
	fail "no cost: median minor faults per exec differ by more than 5% ($on vs $off)"

# ---- pinned ----
dmesg -c >/dev/null
truncate -s 64M loop.img && mkfs.ext4 -q -F loop.img || fail "pinned: cannot make the ext4 image"
mkdir mnt && mount -o loop loop.img mnt || fail "pinned: cannot mount the loop image"
tb_defer "umount '$W/mnt'"
echo 20000 >$VM/pbitmap_learn_window_ms
# learner FILE: map FILE, touch it, unmap and close it, leave for /, wait.
learner() {
	rm -f ready
	python3 - "$1" "$W/ready" <<'PY' &
import mmap, os, sys, time
with open(sys.argv[1], "rb") as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    sum(m[i] for i in range(0, len(m), 4096))
    m.close()
os.chdir("/")
open(sys.argv[2], "w").close()
time.sleep(15)
PY
	LEARNER=$!
	for _ in $(seq 100); do [ -e ready ] && return 0; sleep 0.1; done
	fail "pinned: the learner did not get ready"
}
sync
free0=$(stat -f -c %f mnt)
cp learn-pages mnt/lp-del && pbitmap add -q mnt/lp-del && sync
s0=$(vmstat_counter pbitmap_learn_sets)
learner mnt/lp-del
[ "$(vmstat_delta pbitmap_learn_sets "$s0")" -gt 0 ] || fail "pinned: the learner made no learned set"
rm mnt/lp-del && sync
free1=$(stat -f -c %f mnt)
echo "pinned: free blocks $free0 before the copy, $free1 once it is deleted while its set is pending"
[ "$free1" -ge $((free0 - 16)) ] || fail "pinned: the deleted file's $((free0 - free1)) blocks are still allocated"
kill "$LEARNER" 2>/dev/null || true
wait "$LEARNER" 2>/dev/null || true
cp learn-pages mnt/lp-pin && pbitmap add -q mnt/lp-pin && sync
s0=$(vmstat_counter pbitmap_learn_sets)
learner mnt/lp-pin
[ "$(vmstat_delta pbitmap_learn_sets "$s0")" -gt 0 ] || fail "pinned: the learner made no learned set"
loopdev=$(findmnt -no SOURCE mnt)
umount mnt || fail "pinned: umount failed while a learned set was pending"
# Right after umount: nothing holds the superblock, so the loop device
# (mount -o loop: autoclear) is unbound and opens O_EXCL.
bound=$(losetup -j loop.img)
[ -z "$bound" ] || fail "pinned: right after umount, $loopdev is still bound: $bound"
python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL))' "$loopdev" ||
	fail "pinned: right after umount, $loopdev does not open O_EXCL"
echo "pinned: umount succeeded with the learner alive in its window; right after it $loopdev was unbound and opened O_EXCL"
kill "$LEARNER" 2>/dev/null || true
wait "$LEARNER" 2>/dev/null || true
sleep 1
if dmesg | grep -i "busy inodes"; then fail "pinned: the kernel reports busy inodes"; fi
echo 10000 >$VM/pbitmap_learn_window_ms
echo PASS
