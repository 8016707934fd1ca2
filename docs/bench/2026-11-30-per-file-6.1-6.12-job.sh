#!/bin/bash
# docs/bench/2026-11-30-per-file-6.1-6.12-job.sh: the guest job of issue 46
# (per-file bitmaps from `pbitmap record`, no plan: 6.1 against 6.12).
# The write-up: docs/bench/2026-11-30-per-file-6.1-6.12.md.
#
# Run with each commit's own kernel-patch/scripts/vm and tool (the on-disk
# format differs), the tool passed beside the job as `pbitmap`:
#   6.12 (main):     KERNEL=build/kbuild/arch/x86/boot/bzImage KBUILD=build/kbuild \
#                    IMAGE=build/guest.img kernel-patch/scripts/vm --job JOB build/pbitmap
#   6.1 (9786231, a worktree with its own make kernel / make image):
#                    the same from the worktree, VM_APPEND=no_timer_check
#   6.12 kernel on 9786231's image: the first command with IMAGE=<worktree>/build/guest.img
# (VM_RESULTS, VM_CONSOLE, VM_JOBDIR pointed elsewhere, IOPS left at 150.)
#
# Conditions, RUNS (7) cold starts each, the order rotated every round:
#   off        vm.pbitmap_enabled=0
#   on         vm.pbitmap_enabled=1: per-file bitmaps at exec and mmap
#   off-time, on-time  the same, started as `/usr/bin/time -f %F /usr/bin/env
#              python3.11 -c pass`: the harness cold too, as a hand-made check
#              with time(1) has it
#   on256      (6.12) on, vm.pbitmap_merge_gap_kb=256: the fixed join gap of
#              the 6.1 series instead of 6.12's device model (0017)
#   *-drain    (6.1) the same, the runner first calling posix_fadvise(DONTNEED)
#              on /dev/vda, which on 6.1 ends in lru_add_drain_all(), as 6.12's
#              drop_caches does by itself (fs/drop_caches.c): 6.1's drop_caches
#              leaves pages pinned by the per-CPU LRU batches and bh LRUs cached
#   planarea   (6.12) on, a second tree /pyd stamped by a plain `pbitmap add`
#              (a 32 KiB plan area in the executable), vm.pbitmap_plan=1 and
#              no plan learned (vm.pbitmap_learn=0): what a user gets by default
# Everything else (/pyc, on 6.12 stamped --plan-size 0) runs with
# vm.pbitmap_plan=0.
#
# A private copy of python3.11 and the libraries ldd lists, ld.so included
# (the copy's PT_INTERP rewritten to /pyc/ld-linux-x86-64.so.2 before
# stamping), on the root disk (/dev/vda, throttled by scripts/vm to IOPS
# requests a second).  Bitmaps from `pbitmap record -- /pyc/python3.11 -c
# pass` with LD_LIBRARY_PATH=/pyc, prefetch off while recording.  Cold
# starts: a static runner (compiled here) syncs, drops the caches, reads
# /sys/block/vda/stat, forks and execs the program, waits for it (getrusage:
# major faults), waits for the queue to empty and reads the stat again; the
# runner's own pages stay mapped, so only the start-up reads the disk.
# Every new read request is traced (block:block_getrq with a stack trace:
# its cause) and mapped to a file afterwards (debugfs icheck/ncheck of its
# first block); fincore of the copies after each run, prefetch off
# (fincore's PROT_NONE mappings would prefetch on 6.1).
set -u
RUNS=${RUNS:-7}
D=/pyc
DEV=vda
OUT=$RESULTS
T=/sys/kernel/tracing
TOOL=/mnt/job/pbitmap
krel=$(uname -r)
case $krel in
6.12*) CONDS=${CONDS:-"off on on256 off-time on-time planarea"} ;;
*) CONDS=${CONDS:-"off on off-time on-time off-drain on-drain off-time-drain on-time-drain"} ;;
esac
exec > >(tee "$OUT/log") 2>&1
echo "kernel $krel; conditions $CONDS; $RUNS runs each"
sysctl -a 2>/dev/null | grep -E '^vm\.(pbitmap|mmap_slurp|page-cluster)' | tee "$OUT/sysctl-default"
for f in rotational read_ahead_kb max_sectors_kb optimal_io_size; do
	echo "queue/$f $(cat /sys/block/$DEV/queue/$f 2>/dev/null)"
done | tee "$OUT/queue"
cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
cat /sys/kernel/mm/transparent_hugepage/*/enabled 2>/dev/null
cat /sys/kernel/debug/fault_around_bytes 2>/dev/null | sed 's/^/fault_around_bytes /'

# --- the runner
cat > /tmp/runner.c <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static void stat2(const char *p, unsigned long long *r, unsigned long long *s)
{
	FILE *f = fopen(p, "r");
	unsigned long long a, b, c;
	if (!f || fscanf(f, "%llu %llu %llu", &a, &b, &c) != 3) { perror(p); exit(2); }
	fclose(f); *r = a; *s = c;
}
int main(int argc, char **argv)
{
	unsigned long long r0, s0, r1, s1;
	struct timespec t0, t1;
	struct rusage ru;
	int st, fd;
	pid_t pid;
	if (argc < 3) return 2;
	sync();
	/* PB_DRAIN=DEV: POSIX_FADV_DONTNEED on the disk first; where pages
	 * stay (buffer heads pinned by the per-CPU bh LRUs, folios in per-CPU
	 * LRU batches) the kernel calls lru_add_drain_all(), which 6.12's
	 * drop_caches does itself and 6.1's does not */
	if (getenv("PB_DRAIN")) {
		int b = open(getenv("PB_DRAIN"), O_RDONLY);
		if (b < 0 || posix_fadvise(b, 0, 0, POSIX_FADV_DONTNEED)) { perror("PB_DRAIN"); return 2; }
		close(b);
	}
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0 || write(fd, "3\n", 2) != 2) { perror("drop_caches"); return 2; }
	close(fd);
	usleep(200000);
	stat2(argv[1], &r0, &s0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (!pid) { execv(argv[2], argv + 2); _exit(127); }
	if (wait4(pid, &st, 0, &ru) < 0) return 2;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* prefetches the program did not wait for: until the queue is empty */
	for (int n = 0; n < 100; n++) {
		unsigned long long in_r = 1, in_w = 0;
		char p[256];
		FILE *f;
		snprintf(p, sizeof(p), "%.*s/inflight", (int)(strrchr(argv[1], '/') - argv[1]), argv[1]);
		f = fopen(p, "r");
		if (!f || fscanf(f, "%llu %llu", &in_r, &in_w) != 2) in_r = 0;
		if (f) fclose(f);
		usleep(50000);
		if (!in_r) break;
	}
	stat2(argv[1], &r1, &s1);
	printf("%.1f %llu %llu %ld %ld %d\n",
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
	       r1 - r0, s1 - s0, ru.ru_majflt, ru.ru_minflt, WEXITSTATUS(st));
	return 0;
}
C
gcc -O2 -static -o /tmp/runner /tmp/runner.c || { echo "no static runner"; exit 1; }

# --- the copies: make_tree DIR [pbitmap add options]
py=/usr/bin/python3.11
make_tree() {
	local d=$1; shift
	rm -rf $d; mkdir -p $d
	cp $py $d/
	for l in $(ldd $py | awk '$2 == "=>" { print $3 } $1 ~ /^\// { print $1 }'); do
		cp "$(readlink -f "$l")" "$d/$(basename "$l")"
	done
	python3 - $d/python3.11 $d/ld-linux-x86-64.so.2 <<'PY'
import struct, sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
phoff, = struct.unpack_from('<Q', b, 0x20); phes, phn = struct.unpack_from('<HH', b, 0x36)
for i in range(phn):
    o = phoff + i * phes
    t, = struct.unpack_from('<I', b, o)
    if t == 3:
        off, = struct.unpack_from('<Q', b, o + 8); sz, = struct.unpack_from('<Q', b, o + 32)
        new = sys.argv[2].encode()
        assert len(new) < sz
        b[off:off + sz] = new + b'\0' * (sz - len(new))
open(p, 'wb').write(b)
PY
	ls -l $d; sha256sum $d/* >> "$OUT/sha256"
	LD_LIBRARY_PATH=$d $d/python3.11 -c 'print(open("/proc/self/maps").read())' | grep -E "$d/" | awk '{print $6}' | sort -u
	sysctl -qw vm.pbitmap_enabled=0
	$TOOL add "$@" $d/* || exit 1
	LD_LIBRARY_PATH=$d $TOOL record -- $d/python3.11 -c pass || exit 1
	$TOOL show $d/* > "$OUT/show$(basename $d)" 2>&1
	grep -E '^/|stored in|prefetch ' "$OUT/show$(basename $d)"
}
$TOOL --version
python3 -c 'import sys; print(sys.version)'
if $TOOL add --help 2>&1 | grep -q plan-size; then
	make_tree /pyc --plan-size 0
	# the default a user gets: a 32 KiB plan area in the executable
	make_tree /pyd
	sysctl -qw vm.pbitmap_plan=0
else
	make_tree /pyc
fi
sync
for f in /pyc/* /pyd/*; do [ -e "$f" ] || continue; echo "== $f"; filefrag -v "$f" | sed -n '4,$p'; done > "$OUT/filefrag"

# --- tracing: every new request, with the stack that made it
echo 16384 > $T/buffer_size_kb
echo 0 > $T/tracing_on
echo > $T/trace
echo 1 > $T/events/block/block_getrq/enable
echo 'stacktrace' > $T/events/block/block_getrq/trigger
echo 1 > $T/events/block/block_rq_issue/enable
[ -d $T/events/pbitmap ] && echo 1 > $T/events/pbitmap/enable

echo "cond run ms reads sectors majflt minflt status" > "$OUT/runs.txt"
set -- $CONDS; nc=$#
for i in $(seq 1 $RUNS); do
	# rotate the order every run
	order=$(echo $CONDS | tr ' ' '\n' | awk -v k=$(( (i - 1) % nc )) '{a[NR-1]=$0} END {for (j = 0; j < NR; j++) print a[(j + k) % NR]}')
	for c in $order; do
		d=/pyc cmd=()
		case $c in
		*-drain) export PB_DRAIN=/dev/$DEV ;;
		*) unset PB_DRAIN ;;
		esac
		case $c in
		off|off-time|off-drain|off-time-drain) sysctl -qw vm.pbitmap_enabled=0 ;;
		on|on-time|on-drain|on-time-drain)     sysctl -qw vm.pbitmap_enabled=1 ;;
		on256) sysctl -qw vm.pbitmap_enabled=1 vm.pbitmap_merge_gap_kb=256 ;;
		planarea) d=/pyd; sysctl -qw vm.pbitmap_enabled=1 vm.pbitmap_plan=1 ;;
		esac
		# *-time: the harness started cold too, as in `/usr/bin/time -f %F env ... python3`
		case $c in *-time|*-time-drain) cmd=(/usr/bin/time -f %F /usr/bin/env) ;; esac
		export LD_LIBRARY_PATH=$d
		echo > $T/trace; echo 1 > $T/tracing_on
		res=$(/tmp/runner /sys/block/$DEV/stat "${cmd[@]}" $d/python3.11 -c pass 2>/tmp/stderr)
		echo 0 > $T/tracing_on
		sysctl -qw vm.pbitmap_enabled=0
		[ $c = on256 ] && sysctl -qw vm.pbitmap_merge_gap_kb=-1
		[ $c = planarea ] && sysctl -qw vm.pbitmap_plan=0
		unset LD_LIBRARY_PATH PB_DRAIN
		cp $T/trace "$OUT/trace.$c.$i"
		fincore -b -n -o RES,FILE $d/* > "$OUT/fincore.$c.$i"
		echo "$c $i $res" | tee -a "$OUT/runs.txt"
	done
done
echo 0 > $T/events/block/block_getrq/enable
echo '!stacktrace' > $T/events/block/block_getrq/trigger

# --- sectors to files
python3 - "$OUT" $DEV <<'PY'
import glob, os, re, subprocess, sys
out, dev = sys.argv[1], sys.argv[2]
blocks = set()
ev = re.compile(r'block_(getrq|rq_issue): (\d+),(\d+) (\S+) (?:\(\) )?(\d+) \+ (\d+)')
for t in glob.glob(out + '/trace.*'):
    for line in open(t):
        m = ev.search(line)
        if m and 'R' in m.group(4):
            blocks.add(int(m.group(5)) // 8)
blocks = sorted(blocks)
ino = {}
for i in range(0, len(blocks), 200):
    r = subprocess.run(['debugfs', '-c', '-R', 'icheck ' + ' '.join(map(str, blocks[i:i+200])), '/dev/' + dev],
                       capture_output=True, text=True).stdout
    for l in r.splitlines()[1:]:
        p = l.split(None, 1)
        if len(p) == 2 and p[0].isdigit():
            ino[int(p[0])] = p[1].strip()
inos = sorted({v for v in ino.values() if v.isdigit()}, key=int)
name = {}
for i in range(0, len(inos), 200):
    r = subprocess.run(['debugfs', '-c', '-R', 'ncheck ' + ' '.join(inos[i:i+200]), '/dev/' + dev],
                       capture_output=True, text=True).stdout
    for l in r.splitlines()[1:]:
        p = l.split(None, 1)
        if len(p) == 2 and p[0].isdigit():
            name.setdefault(p[0], p[1].strip())
with open(out + '/blockmap', 'w') as f:
    for b in blocks:
        v = ino.get(b, '?')
        if not v.isdigit():
            v = '-'
        f.write('%d %s %s\n' % (b, v, name.get(v, '<metadata>' if v == '-' else '?')))
PY
echo "blockmap: $(wc -l < "$OUT/blockmap") blocks"
