#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kernel-patch/bench/bench-job.sh: the benchmark's guest job, one disk model
# per boot (`make bench` boots one guest per model, see bench-run.sh).
#
# The workloads run in a chroot of a second disk, /dev/vdb: a copy of the
# guest image that the host attaches throttled (QEMU throttling.iops-total),
# behind an NBD server that delays every read (nbdkit's delay filter: the
# requests overlap, as on network block storage) or unthrottled.  Only vdb's
# read requests are counted; the harness (bash, time, chroot, python for the
# ground truth) runs from the root disk, and its files are kept resident
# (mlock) so that dropping the caches leaves them cached.
#
# Conditions (issue 12), all in one shuffled order, page cache dropped before
# every run but `warm` and the `pressure` ones:
#   nora     demand paging with nothing around it: fault_around_bytes=4096,
#            read_ahead_kb=0 (the definition of "pages used")
#   off      the stock kernel (pbitmap and the baselines off)
#   off-busyN  off, with a loop that keeps a CPU busy for N ms started
#            beside the program: what another task's CPU at a start-up
#            costs it on this machine (under TCG the guest's vCPUs share
#            the host's cores with the emulator's I/O thread), to set
#            beside pbitmapd's own CPU per run (daemon.txt, cpu_ms)
#   slurp    vm.mmap_slurp_all=1 (every file mapping read whole at mmap)
#   early    the 2008 synchronous mode (vm.pbitmap_early_fault=1, mmap off)
#   exec     pbitmap prefetch of the executable and interpreter only
#            (vm.pbitmap_mmap=0)
#   full     pbitmap at exec and at every mmap (executable, interpreter,
#            libraries, data files)
#   learned  as full, in a second tree whose bitmaps the kernel learned
#            itself over LEARN_RUNS earlier cold runs (vm.pbitmap_learn=1);
#            start-up plans not followed (vm.pbitmap_plan=0)
#   plan     learned, with the start-up plans the kernel learned in the
#            same runs followed at exec (vm.pbitmap_plan=1): the workloads'
#            executables carry a plan area of PLAN_SIZE bytes (64K) in the
#            second tree (issue 25)
#   plan-paced  plan with its batch paced to the device
#            (vm.pbitmap_plan_inflight_kb=-1, the bound from the device;
#            every other condition has 0, the default: the batch whole at
#            exec): pacing and the whole batch side by side
#   plan-gapN  plan with a fixed N KiB merge gap (vm.pbitmap_merge_gap_kb=N;
#            every other condition has -1, the gap from the device): the
#            model and a fixed gap side by side in one run; plan-gap256 is
#            the series' gap before its device cost model
#   plan-probed  plan with the gap `pbitmap device-gap` measured on the
#            bench disk at the job's start (what pbitmap-device-gap.service
#            sets at boot): a fixed gap where a request is worth less
#            transfer than the kernel's model says, else the model (-1)
#   plan-probed-paced  plan-probed with its batch paced (as plan-paced)
#   plan-probed-nometa  plan-probed with its plans' metadata tables not
#            read (vm.pbitmap_plan_meta=0; every other condition has 1,
#            the default: a table read wherever its rules allow): what the
#            kernel's own metadata batch (0024, 0025) adds
#   plan-probed-widemeta  plan-probed with tables read only where the
#            join gap is at least 256 KiB (vm.pbitmap_plan_meta=-1, the
#            default until 2026-12-06, when plan-probed-allmeta was the
#            name of what plan-probed is now)
#   off-b, slurp-b  off and slurp in tree B, where every plan condition
#            runs: B's directories and its stamped files are copies made at
#            the job's start, laid out apart from A's, so that a cold start
#            there reads other blocks in another order; a plan against the
#            baselines in its own tree as well as in A
#   plan-probed-dmeta  plan-probed with pbitmapd running beside the
#            kernel, which then reads each program's metadata list and
#            nothing else (pbitmapd(8)); the lists learned by pbitmapd in
#            tree B's learning runs, while the kernel learned the pages (a
#            kernel with BPF: make kernel BPF=1); with it in CONDITIONS, every
#            tree B condition's plans are learned with pbitmapd running
#   plan-probed-meta  an experiment: plan-probed, the run preceded (inside
#            its time) by meta-willneed, which asks for the bench disk's
#            blocks an earlier cold plan-probed run of the workload read
#            through the block device's page cache (directories, inode
#            tables: meta_list()), joined across plan-probed's gap, all at
#            once: what the path look-ups of a start-up would cost if their
#            metadata were read in one batch
#   plan-probed-later  plan-probed with the plan's files not in the dentry
#            cache opened by a worker after exec
#            (vm.pbitmap_plan_lookup_later=1; every other condition has 0,
#            the default: every look-up at exec): the two side by side
#   user     no kernel prefetch: pbitmap-run replays the same bitmaps from
#            userspace, then executes the program
#   audit    no kernel prefetch: the LD_AUDIT module pbitmap-audit.so
#            replays the same bitmaps object by object, as ld.so opens each
#            (issue 25's user-space baseline; every program the workload
#            executes inherits LD_AUDIT)
#   preload  every file the program maps read whole (cat) before it starts,
#            as vmtouch/ureadahead users do; the reads are counted
#   warm     everything cached: one uncounted run just before (the floor)
#   pressure as full, on a full machine: instead of the drop, the workload's
#            files are evicted with POSIX_FADV_DONTNEED (those it maps and
#            every other file of its tree a cold run of it caches, listed
#            once in tree A: evict.txt, evict.W) and a sparse
#            file of MemTotal + 25% on the root disk is read whole, so that
#            the page cache is full of other pages and free memory sits at
#            the watermarks (fill-evict.c, shared with t-pressure.sh)
#   pressure-off  the same eviction, pbitmap off: pressure's baseline
#   pressure-off-cold  pressure-off with the file system's metadata cold as
#            after a drop: once the fill is read, the dentry and inode
#            caches dropped (drop_caches=2, which leaves the fill: an inode
#            with cached pages is not on the inode LRU) and the bench
#            disk's own cached blocks (blockdev --flushbufs); the slab
#            that frees is free memory the fill no longer takes (MemFree
#            after it in pressure.txt)
#   pressure-plan as plan, on a full machine: the same eviction and fill, of
#            the learned tree B's files (its data files are copies)
#   pressure-plan-probed  pressure-plan with plan-probed's gap
#   pressure-plan-gapN  pressure-plan with plan-gapN's fixed gap
#   daemon   pbitmapd (pbitmap-tool/daemon/) on whatever kernel booted, the
#            series' prefetch off: in a third tree D whose bitmaps and
#            start-up plans pbitmapd learned itself over LEARN_RUNS earlier
#            cold runs (BPF; its defaults otherwise: the join gap of its
#            kernel, the memory-pressure skip), started before each run
#            after the drop, stopped after it; its counters per run in
#            daemon.txt.  The only prefetching condition a stock kernel runs
#   pressure-daemon  daemon on a full machine (tree D's files evicted)
#   daemon-gapN  daemon with its join gap N KiB (PBITMAP_DAEMON_JOIN_GAP_KB)
#   daemon-probed, pressure-daemon-probed  daemon with the gap it takes from
#            pbitmap-device-gap.service: the gap `pbitmap device-gap`
#            measures on the bench disk, or its default where that is -1
#   daemon-nometa  daemon without its metadata lists
#            (PBITMAP_DAEMON_METADATA=no): each start-up's look-ups read
#            their directory and inode blocks one at a time, as before the
#            lists (pbitmapd's meta.c); daemon has them
#   daemon-nometa-probed  daemon-nometa with daemon-probed's gap: what the
#            lists add in the configuration a user gets.  pbitmapd's
#            default (PBITMAP_DAEMON_METADATA=auto, since 0c1d24d) reads
#            no list at a gap under 256 KiB: there (ebs) the two conditions
#            and plan-probed-dmeta's lists read nothing, as a user gets it
#   daemon-planleft-probed  daemon-probed with PBITMAP_DAEMON_READ_PLAN=no:
#            an exec's plan read for its metadata list only, its files'
#            pages left to the kernel's read-ahead
#   daemon-dataread-probed  daemon-probed with PBITMAP_DAEMON_READ_DATA=yes:
#            stamped data files read at their open and in a plan whatever the
#            device's read-ahead window (the default, auto, leaves them to the
#            kernel where the window is at least the largest request and the
#            join gap at least 1024 KiB)
#   daemon-readall-probed  daemon-probed with PBITMAP_DAEMON_READ_PROGRAM=yes
#            and _READ_LIBRARIES=yes: a program's own pages and its
#            libraries read whatever the device's window
#   daemon-b pbitmapd serving tree B (the bitmaps and start-up plans the
#            series' kernel learned), the series' prefetch off: the same
#            plans read from user space instead of at exec (a boot of the
#            series only; its test-bed kernel has no BPF, so pbitmapd cannot
#            learn there)
#   pressure-daemon-b  daemon-b on a full machine
#   daemon-a, daemon-a-probed  pbitmapd serving tree A (the ground truth's
#            bitmaps, as `full` reads them; no plans, no metadata lists),
#            with its default gap or daemon-probed's: pbitmapd where it
#            cannot learn (no BPF, as on a host in kernel lockdown), on any
#            kernel
#   daemon-hold, daemon-b-hold  daemon, daemon-b with execs held until
#            their read-ahead is submitted (PBITMAP_DAEMON_HOLD_EXEC_MS=100;
#            daemon-holdN, daemon-b-holdN: at most N ms)
# On a stock kernel (no vm.pbitmap_*: bench-run.sh's BENCH_KERNEL) only the
# conditions that need nothing of the series run: off, nora, user, audit,
# preload, warm, pressure-off, pressure-off-cold and pbitmapd's in tree D
# (in_tree_d).
# The bitmaps of full/exec/early/user are the ground truth (ground_truth.py,
# the nora run's pages, measured once at set-up); `learned` has its own.
#
# After the timed runs, with WAITS=1, one more cold run of every (workload,
# condition) under stap/waits.stp (not timed with the others: the probes cost
# time): where each run waited, by cause, which cause made its read requests
# on the bench disk (beside the disk's own count of them), and how many first
# touches found their page neither cached nor in flight (misses), against the
# pages the workload uses (its ground truth): waits.csv, and waits/ (each
# run's output).
# That pass runs with every CPU but the first offline (see cpus_online).
#
# Configuration: bench.conf beside the job (written by bench-run.sh), shell
# assignments of DISK, RUNS, GCC_RUNS, LEARN_RUNS, WORKLOADS, CONDITIONS,
# EXEC_BENCH, EXEC_REPEATS, WAITS, DAEMON_FAULT_AROUND, BENCH_DEV.  Results in
# $RESULTS: bench.csv (one row per run, the columns
# report.py reads), progress (k n elapsed), setup.txt (what was stamped and
# learned, the floors), exec.csv (the warm-exec microbenchmark),
# pressure.txt (the memory before each `pressure` run: fill-evict's line),
# evict.txt and evict.W (how many files, and which, a full machine evicts
# for each workload W).
set -euo pipefail
JOB=$PWD
OUT=${RESULTS:-$JOB/results}
die() { echo "bench-job: $*" >&2; echo "bench-job: $*" >"$OUT/error"; exit 1; }
# set -e exits without a word: say which command failed, and where.
set -E
trap 'echo "bench-job: line $LINENO: exit status $? from: $BASH_COMMAND" >&2' ERR
[ -f "$JOB/bench.conf" ] || die "no bench.conf beside the job"
# shellcheck source=/dev/null
. "$JOB/bench.conf"
: "${DISK:?}" "${RUNS:?}" "${GCC_RUNS:=$RUNS}" "${LEARN_RUNS:=3}" "${EXEC_BENCH:=0}" "${EXEC_REPEATS:=3}"
: "${WORKLOADS:=gcc gdb python3 emacs pack}"
: "${CONDITIONS:=nora off slurp early exec full learned plan user audit preload warm pressure-off pressure pressure-plan}"
: "${PLAN_SIZE:=64K}" "${WAITS:=0}"
read -ra workloads <<<"$WORKLOADS"
read -ra conditions <<<"$CONDITIONS"
has_condition() { [[ " ${conditions[*]} " == *" $1 "* ]]; }
build_helper() {	# NAME OUT: the job's NAME.c built as OUT, warnings on
	gcc -std=c11 -O2 -Wall -Wextra -o "$2" "$JOB/$1.c" || die "cannot build $1"
}
# The conditions that need the learned tree B; those that run on a full machine.
in_tree_b() { case $1 in off-b | slurp-b | learned | plan | plan-paced | plan-probed | plan-probed-paced | plan-probed-nometa | plan-probed-widemeta | plan-probed-later | plan-probed-meta | plan-probed-dmeta | plan-gap[0-9]* | pressure-plan | pressure-plan-probed | pressure-plan-gap[0-9]* | daemon-b | pressure-daemon-b | daemon-b-hold | daemon-b-hold[0-9]*) return 0 ;; esac; return 1; }
needs_b() {
	local c
	for c in "${conditions[@]}"; do in_tree_b "$c" && return 0; done
	return 1
}
is_pressure() { case $1 in pressure | pressure-off | pressure-off-cold | pressure-plan | pressure-plan-probed | pressure-plan-gap[0-9]* | pressure-daemon | pressure-daemon-b | pressure-daemon-probed) return 0 ;; esac; return 1; }
# The conditions pbitmapd serves: those in the tree it learned (D), and
# those in the kernel's learned tree B.
in_tree_d() { case $1 in daemon | daemon-nometa | daemon-nometa-probed | daemon-planleft-probed | daemon-dataread-probed | daemon-readall-probed | pressure-daemon | daemon-gap[0-9]* | daemon-probed | pressure-daemon-probed | daemon-hold | daemon-hold[0-9]*) return 0 ;; esac; return 1; }
in_tree_a_daemon() { case $1 in daemon-a | daemon-a-probed) return 0 ;; esac; return 1; }
is_daemon() { in_tree_d "$1" || in_tree_a_daemon "$1" || case $1 in daemon-b | pressure-daemon-b | daemon-b-hold | daemon-b-hold[0-9]*) true ;; plan-probed-dmeta) true ;; *) false ;; esac; }
needs_d() {
	local c
	for c in "${conditions[@]}"; do in_tree_d "$c" && return 0; done
	return 1
}
needs_daemon() {
	local c
	for c in "${conditions[@]}"; do is_daemon "$c" && return 0; done
	return 1
}
needs_series() {
	in_tree_d "$1" && return 1
	in_tree_a_daemon "$1" && return 1
	case $1 in off | off-busy[0-9]* | nora | user | audit | preload | warm | pressure-off | pressure-off-cold) return 1 ;; esac
	return 0
}
has_workload() { [[ " ${workloads[*]} " == *" $1 "* ]]; }
for f in ground_truth.py stamp-truth.py jaccard.py floor.py pbitmap-run pbitmap-audit.so fill-evict.c meta-willneed.c timed.c; do
	[ -e "$JOB/$f" ] || die "no $f beside the job (bench-run.sh copies it)"
done
! needs_daemon || [ -x "$JOB/pbitmapd" ] || die "no pbitmapd beside the job (bench-run.sh copies it)"
# The series' kernel, or a stock one: there, only what needs nothing of it.
series=0
[ -e /proc/sys/vm/pbitmap_enabled ] && series=1
for c in "${conditions[@]}"; do
	[ $series = 1 ] || ! needs_series "$c" ||
		die "condition $c needs the pbitmap kernel; $(uname -r) is a stock kernel"
done
if [ $series = 1 ]; then
	for s in pbitmap_enabled pbitmap_mmap pbitmap_early_fault mmap_slurp_all pbitmap_learn; do
		[ -w /proc/sys/vm/$s ] || die "the kernel has no vm.$s"
	done
fi
# The wait-attribution pass needs the host-built waits.stp module and a
# staprun of the same systemtap version: checked now, not after the runs.
if [ "$WAITS" = 1 ]; then
	[ -f "$JOB/stap_waits.ko" ] && [ -f "$JOB/stap-version" ] ||
		die "WAITS=1: no stap_waits.ko and stap-version beside the job"
	have=$(dpkg-query -W -f='${Version}' systemtap-runtime 2>/dev/null || true)
	[ "$have" = "$(<"$JOB/stap-version")" ] ||
		die "WAITS=1: guest staprun is '${have:-missing}', the module was built by systemtap $(<"$JOB/stap-version")"
	# shellcheck source=stap/build-id.sh
	. "$JOB/build-id.sh"
	why=$(stap_build_id_check "$JOB/stap_waits.ko") || die "WAITS=1: $why"
fi
[ "$EXEC_BENCH" = 0 ] || [ $series = 1 ] || needs_daemon ||
	die "EXEC_BENCH=1 on a stock kernel measures pbitmapd's cost: add a daemon condition"
[ "$WAITS" = 0 ] || [ $series = 1 ] ||
	die "WAITS=1: waits.stp is built for the series' kernel, not $(uname -r)"
t_start=$EPOCHSECONDS
log() { echo "$(date +%T) $*"; }

# --- The bench disk: the guest image's copy, mounted as the chroot A.
# BENCH_DEV (bench.conf): another block device's name, for a run on the
# host's own kernel (bench-run.sh's BENCH_KERNEL=host: a loop device).
A=/bench
DEV=${BENCH_DEV:-vdb}
[ -b /dev/$DEV ] || die "no second disk /dev/$DEV (bench-run.sh attaches it)"
mkdir -p $A && mount -o noatime /dev/$DEV $A || die "cannot mount /dev/$DEV"
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
FAULT_AROUND=/sys/kernel/debug/fault_around_bytes
RA=/sys/block/$DEV/queue/read_ahead_kb
io_opt=$(<"/sys/block/$DEV/queue/optimal_io_size")
# ebs-opt's disk reports the operation it is charged by (bench-run.sh).
[ "$DISK" != ebs-opt ] || [ "$io_opt" = 262144 ] ||
	die "disk model ebs-opt: $DEV reports optimal_io_size $io_opt, not 262144"
[ -w $FAULT_AROUND ] || die "no $FAULT_AROUND"
# A kernel whose debugfs refuses fault_around_bytes (kernel lockdown: the
# host of BENCH_KERNEL=host, a BENCH_DEV run only): fault-around stays as it
# is and nora cannot run.  The ground truth is exact all the same: with
# readahead off, fault-around only maps pages already cached (ground_truth.py).
fa_ok=1
fault_around0=$(cat $FAULT_AROUND 2>/dev/null) || fa_ok=0
if [ $fa_ok = 0 ]; then
	[ -n "${BENCH_DEV-}" ] || die "$FAULT_AROUND cannot be read"
	! has_condition nora || die "condition nora: $FAULT_AROUND cannot be read or set on $(uname -r)"
	log "$FAULT_AROUND refused: fault-around left at the kernel's setting, no nora"
fi
# SSD_READ_AHEAD_KB (bench-run.sh): the disk as an SSD, non-rotational with
# that window; rotational first (its limits' update never lowers the window)
if [ -n "${SSD_READ_AHEAD_KB-}" ]; then
	echo 0 >/sys/block/$DEV/queue/rotational && echo "$SSD_READ_AHEAD_KB" >$RA ||
		die "SSD_READ_AHEAD_KB=$SSD_READ_AHEAD_KB: cannot set $DEV's rotational and read_ahead_kb"
	[ "$(<$RA)" = "$SSD_READ_AHEAD_KB" ] || die "$DEV's read_ahead_kb is $(<$RA), not $SSD_READ_AHEAD_KB"
	log "$DEV non-rotational, read_ahead_kb $SSD_READ_AHEAD_KB (SSD_READ_AHEAD_KB)"
fi
# The gap `pbitmap device-gap` measures on the bench disk, as the package's
# pbitmap-device-gap.service does at boot: condition plan-probed's.
probe_gap=-1
if has_condition plan-probed || has_condition plan-probed-paced || has_condition plan-probed-later ||
	has_condition plan-probed-nometa || has_condition plan-probed-widemeta ||
	has_condition plan-probed-meta || has_condition plan-probed-dmeta ||
	has_condition pressure-plan-probed ||
	has_condition daemon-probed || has_condition pressure-daemon-probed ||
	has_condition daemon-nometa-probed || has_condition daemon-a-probed ||
	has_condition daemon-planleft-probed || has_condition daemon-dataread-probed ||
	has_condition daemon-readall-probed; then
	probe_gap=$(pbitmap device-gap -q $A) || die "pbitmap device-gap $A failed"
	log "pbitmap device-gap on $DEV: $probe_gap (KiB; -1: the kernel's model)"
fi
# RQ_TRACE=1 (bench-run.sh): each timed run's block events on the bench disk,
# bios as their tasks queue them and requests as issued, in rq-trace/W.C.K
# (kernel-patch/bench/rq-by-task.py sums them by task).
TRACEFS=/sys/kernel/tracing RQ_EVENTS="block_bio_queue block_rq_issue"
need_tracefs() {	# WHO: tracefs mounted, or die saying who needed it
	[ -d $TRACEFS/events ] || mount -t tracefs nodev $TRACEFS || die "$1: no tracefs at $TRACEFS"
}
# RQ_STACK=1 adds block:block_getrq with each new request's kernel stack.
[ "${RQ_STACK:-0}" != 1 ] || RQ_EVENTS="$RQ_EVENTS block_getrq"
if [ "${RQ_TRACE:-0}" = 1 ]; then
	need_tracefs RQ_TRACE=1
	IFS=: read -r dev_major dev_minor </sys/block/$DEV/dev
	for ev in $RQ_EVENTS; do
		[ -d $TRACEFS/events/block/$ev ] || die "RQ_TRACE=1: no block:$ev event"
		echo "dev == $(((dev_major << 20) | dev_minor))" >$TRACEFS/events/block/$ev/filter
	done
	# A trigger is run on events its event's filter drops: it takes the filter too.
	[ "${RQ_STACK:-0}" != 1 ] ||
		echo "stacktrace if dev == $(((dev_major << 20) | dev_minor))" >$TRACEFS/events/block/block_getrq/trigger ||
		die "RQ_STACK=1: no stacktrace trigger on block:block_getrq"
	echo 8192 >$TRACEFS/buffer_size_kb
	mkdir -p "$OUT/rq-trace"
fi
rq_trace() {	# on | off W C K
	[ "${RQ_TRACE:-0}" = 1 ] || return 0
	local ev
	if [ "$1" = on ]; then
		echo 0 >$TRACEFS/tracing_on && echo >$TRACEFS/trace
		for ev in $RQ_EVENTS; do echo 1 >$TRACEFS/events/block/$ev/enable; done
		echo 1 >$TRACEFS/tracing_on
		return
	fi
	echo 0 >$TRACEFS/tracing_on
	for ev in $RQ_EVENTS; do echo 0 >$TRACEFS/events/block/$ev/enable; done
	grep -v '^#' $TRACEFS/trace >"$OUT/rq-trace/$2.$3.$4"
}
ra0=$(<$RA)
chroot_mounts() {	# ROOT: what a program run in ROOT needs of the live system
	mount --bind /proc "$1/proc" && mount --bind /sys "$1/sys" &&
		mount --bind /dev "$1/dev" && mount -t tmpfs tmpfs "$1/tmp" ||
		die "cannot set up the mounts of $1"
}
chroot_mounts $A
mkdir -p $A/var/bench

# Inputs on the bench disk, so that a workload reads them there.
if [ -f "$JOB/sched.i" ]; then
	cp "$JOB/sched.i" $A/var/bench/sched.i
	gcc_desc="gcc -O2 -S sched.i ($(wc -l <$A/var/bench/sched.i) lines)"
else
	printf 'int square(int x) { return x * x; }\n' >$A/var/bench/sched.i
	gcc_desc="gcc -O2 -S of a one-line file (sched.i not given)"
fi
if has_workload pack; then
	for f in packlookup linux.pack linux.idx; do
		[ -f "$JOB/$f" ] || die "no $f beside the job (the pack workload needs it)"
	done
	cp "$JOB/linux.pack" "$JOB/linux.idx" $A/var/bench/
	install -m 0755 "$JOB/packlookup" $A/usr/local/bin/packlookup
fi
install -m 0755 "$JOB/pbitmap-run" $A/usr/local/bin/pbitmap-run
install -D -m 0644 "$JOB/pbitmap-audit.so" $A/usr/local/lib/pbitmap/pbitmap-audit.so

in_root() { chroot "$A" "$@"; }
real() { in_root readlink -f "$1"; }
gcc_real=$(real /usr/bin/gcc)
cc1=$(real "$(in_root gcc -print-prog-name=cc1)")
python_real=$(real /usr/bin/python3)
emacs_real=$(real /usr/bin/emacs)
declare -A cmd=(
	[gcc]="$gcc_real -O2 -S -w /var/bench/sched.i -o /tmp/out.s"
	[gdb]="/usr/bin/gdb -batch"
	[python3]="$python_real -c pass"
	[emacs]="$emacs_real -batch"
	[pack]="/usr/local/bin/packlookup /var/bench/linux.idx /var/bench/linux.pack"
)
declare -A desc=(
	[gcc]=$gcc_desc [gdb]="gdb -batch" [python3]="python3 -c pass"
	[emacs]="emacs -batch" [pack]="packlookup: 200 objects of a git pack of the Linux source"
)
for w in "${workloads[@]}"; do [ -n "${cmd[$w]:-}" ] || die "unknown workload $w"; done

# --- Each workload's files (chroot paths): its programs, the libraries ldd
# lists, and the data files it maps.
ldd_files() {	# EXE (chroot path)
	echo "$1"
	in_root ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
		while read -r p; do in_root readlink -f "$p"; done
}
declare -A files=()
workload_files() {	# W
	case $1 in
	gcc) ldd_files "$gcc_real"; ldd_files "$cc1" ;;
	gdb) ldd_files "$(real /usr/bin/gdb)" ;;
	python3) ldd_files "$python_real" ;;
	emacs)
		local pdmp
		pdmp=$(cd $A && find usr/lib/emacs usr/libexec/emacs -name '*.pdmp' 2>/dev/null | head -n 1)
		[ -n "$pdmp" ] || die "no emacs dump file (*.pdmp) in the bench disk"
		ldd_files "$emacs_real"; echo "/$pdmp"
		(cd $A && find usr/lib/emacs -path '*/native-lisp/*/preloaded/*.eln' | sed 's|^|/|') ;;
	pack) ldd_files /usr/local/bin/packlookup; printf '%s\n' /var/bench/linux.idx /var/bench/linux.pack ;;
	esac
}
for w in "${workloads[@]}"; do files[$w]=$(workload_files "$w"); done
for w in "${workloads[@]}"; do
	files[$w]=$(sort -u <<<"${files[$w]}")
done

# --- The runs' clock: timed.c, /usr/bin/time's fields with the wall time
# in microseconds (a cold start of 0.15 s is 7.5 ms from its +5% bound).
# Beside /var/tmp/bench, which the set-up below makes afresh.
TIMED=/var/tmp/bench-timed
build_helper timed $TIMED
# --- Keep the harness resident: drop_caches cannot drop mlocked pages, so
# the runs' own tools (bash, chroot, timed, cat, sha256sum and their
# libraries, all on the root disk) never fault between the counters.
pin_list=()
for p in /bin/bash /usr/sbin/chroot $TIMED /bin/cat /usr/bin/sha256sum; do
	pin_list+=("$(readlink -f $p)")
	while read -r l; do pin_list+=("$(readlink -f "$l")"); done < <(ldd "$p" |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
done
rm -f /run/bench-pinned && mkfifo /run/bench-pinned
python3 - "${pin_list[@]}" <<'PY' &
import ctypes, mmap, signal, sys
libc = ctypes.CDLL("libc.so.6", use_errno=True)
maps = []
for path in sorted(set(sys.argv[1:])):
    with open(path, "rb") as f:
        maps.append(mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ))
if libc.mlockall(1) != 0:  # MCL_CURRENT: every page of every mapping, resident
    sys.exit("mlockall failed, errno %d" % ctypes.get_errno())
open("/run/bench-pinned", "w").write("%d files\n" % len(maps))
signal.pause()
PY
pin_pid=$!
read -r pinned </run/bench-pinned || die "the harness could not be pinned"

# --- Condition switches.
vm() { echo "$2" >/proc/sys/vm/"$1"; }
set_condition() {
	local en=0 early=0 slurp=0 mmap=1 plan=0 gap=-1 inflight=0 later=0 meta=1 fa=$fault_around0 ra=$ra0
	case $1 in
	off | off-b | off-busy[0-9]* | user | audit | preload | warm | pressure-off | pressure-off-cold) ;;
	nora) fa=4096 ra=0 ;;
	slurp | slurp-b) slurp=1 ;;
	early) en=1 early=1 mmap=0 ;;
	exec) en=1 mmap=0 ;;
	full | learned | pressure) en=1 ;;
	plan | pressure-plan) en=1 plan=1 ;;
	plan-paced) en=1 plan=1 inflight=-1 ;;
	plan-gap[0-9]* | pressure-plan-gap[0-9]*) en=1 plan=1 gap=${1##*plan-gap} ;;
	plan-probed | plan-probed-meta | plan-probed-dmeta | pressure-plan-probed) en=1 plan=1 gap=$probe_gap ;;
	plan-probed-paced) en=1 plan=1 gap=$probe_gap inflight=-1 ;;
	plan-probed-later) en=1 plan=1 gap=$probe_gap later=1 ;;
	plan-probed-nometa) en=1 plan=1 gap=$probe_gap meta=0 ;;
	plan-probed-widemeta) en=1 plan=1 gap=$probe_gap meta=-1 ;;
	*) is_daemon "$1" || die "unknown condition $1" ;;	# pbitmapd: the series off
	esac
	[ $fa_ok = 0 ] || echo "$fa" >$FAULT_AROUND
	echo "$ra" >$RA
	[ $series = 1 ] || return 0
	vm pbitmap_enabled $en; vm pbitmap_mmap $mmap; vm pbitmap_early_fault $early
	vm mmap_slurp_all $slurp
	vm pbitmap_plan $plan
	vm pbitmap_merge_gap_kb $gap
	[ ! -e /proc/sys/vm/pbitmap_plan_inflight_kb ] || vm pbitmap_plan_inflight_kb $inflight
	[ ! -e /proc/sys/vm/pbitmap_plan_lookup_later ] || vm pbitmap_plan_lookup_later $later
	[ ! -e /proc/sys/vm/pbitmap_plan_meta ] || vm pbitmap_plan_meta $meta
}
# pbitmapd, as a user runs it (pbitmapd(8)): its settings file says on, and
# what else it says is the condition's.  Its status file tells when it is
# ready (written once its marks are placed) and what it did.
DAEMON_STATUS=/run/bench-pbitmapd.status DAEMON_PID=
daemon_start() {	# CONF: settings beside the work directory
	rm -f $DAEMON_STATUS
	"$JOB/pbitmapd" -c "$1" -s $DAEMON_STATUS 2>>"$OUT/daemon.log" &
	DAEMON_PID=$!
	local i
	for ((i = 0; i < 200; i++)); do [ -s $DAEMON_STATUS ] && return 0; sleep 0.05; done
	die "pbitmapd wrote no status file in 10 s: $(tail -n 5 "$OUT/daemon.log")"
}
daemon_counter() {	# NAME: sets VAL
	proc_value $DAEMON_STATUS "$1"
}
daemon_cpu_ticks() {	# sets TICKS: the daemon's CPU, its reaped children's too
	TICKS=0
	[ -n "$DAEMON_PID" ] || return 0
	local f
	read -ra f </proc/$DAEMON_PID/stat 2>/dev/null ||
		die "pbitmapd (pid $DAEMON_PID) is gone: $(tail -n 5 "$OUT/daemon.log")"
	TICKS=$((f[13] + f[14] + f[15] + f[16]))	# utime stime cutime cstime
}
# Waits up to 3 s for pbitmapd to have no child left: its status file's
# `pending`, rewritten at every reap (/proc's children lists are not in
# every kernel: the series' config has no CONFIG_PROC_CHILDREN).  Builtins
# only, the pause a read from a pipe nobody writes: a program run here
# would be an exec and opens of the daemon measured.
daemon_reaped() {	# LABEL
	local i
	[ -n "${PAUSE_FD-}" ] || exec {PAUSE_FD}<> <(:)
	for ((i = 0; i < 60; i++)); do
		daemon_counter pending
		[ "$VAL" != 0 ] || return 0
		read -rt 0.05 -u "$PAUSE_FD" _ || true
	done
	echo "bench: $1: pbitmapd still had $VAL child(ren) after 3 s; its CPU is counted without them" >&2
}
daemon_stop() {
	[ -n "$DAEMON_PID" ] || return 0
	kill "$DAEMON_PID" 2>/dev/null || true
	wait "$DAEMON_PID" 2>/dev/null || true
	DAEMON_PID=
}
restore() {
	daemon_stop
	set_condition off
	[ $series = 0 ] || vm pbitmap_learn 0
	kill "$pin_pid" 2>/dev/null || true
}
trap restore EXIT
set_condition off

# --- Ground truth: the pages each workload faults with nothing around them,
# measured on the unstamped disk; the union over workloads is what the set's
# files are stamped with (a file several workloads use: libc, ld.so, ...).
cd /var/tmp && rm -rf bench && mkdir bench && cd bench
# pbitmapd's settings: on, its defaults else; reading ahead only, for the
# runs, or learning too (tree D's set-up, every run learned).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\n' >daemon-read.conf
daemon_conf() {	# CONDITION: its settings file (daemon-gapN: the join gap N KiB)
	local n=${1#daemon-gap} tag= f
	case $1 in
	*daemon-probed | daemon-nometa-probed | daemon-planleft-probed | daemon-dataread-probed | daemon-readall-probed | daemon-a-probed | plan-probed-dmeta)	# pbitmapd's rule: the measured gap, or 256 where -1
		n=256
		[ "$probe_gap" -lt 0 ] || n=$probe_gap
		[ "$1" != daemon-nometa-probed ] || tag=nometa-
		[ "$1" != daemon-planleft-probed ] || tag=planleft-
		[ "$1" != daemon-dataread-probed ] || tag=dataread-
		[ "$1" != daemon-readall-probed ] || tag=readall- ;;
	daemon-gap[0-9]*) ;;
	daemon-nometa)
		printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_METADATA=no\n' \
			>/var/tmp/bench/daemon-nometa.conf
		echo /var/tmp/bench/daemon-nometa.conf; return ;;
	*-hold | *-hold[0-9]*)
		n=${1##*-hold}
		[ -f /var/tmp/bench/daemon-hold$n.conf ] ||
			printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_HOLD_EXEC_MS=%s\n' \
				"${n:-100}" >/var/tmp/bench/daemon-hold$n.conf
		echo /var/tmp/bench/daemon-hold$n.conf; return ;;
	*) echo /var/tmp/bench/daemon-read.conf; return ;;
	esac
	f=/var/tmp/bench/daemon-${tag}gap$n.conf
	[ -f "$f" ] || {
		printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_JOIN_GAP_KB=%s\n' "$n"
		[ "$tag" != nometa- ] || echo PBITMAP_DAEMON_METADATA=no
		[ "$tag" != planleft- ] || echo PBITMAP_DAEMON_READ_PLAN=no
		[ "$tag" != dataread- ] || echo PBITMAP_DAEMON_READ_DATA=yes
		[ "$tag" != readall- ] || printf 'PBITMAP_DAEMON_READ_PROGRAM=yes\nPBITMAP_DAEMON_READ_LIBRARIES=yes\n'
	} >"$f"
	echo "$f"
}
# DAEMON_FAULT_AROUND: PBITMAP_DAEMON_LEARN_FAULT_AROUND for tree D's
# learning (unset: the daemon's default, windows; keep; off: every page
# touched faults, as the ground truth is measured).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN_INTERVAL_S=0\n' >daemon-learn.conf
[ -z "${DAEMON_FAULT_AROUND-}" ] ||
	echo "PBITMAP_DAEMON_LEARN_FAULT_AROUND=$DAEMON_FAULT_AROUND" >>daemon-learn.conf
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# The pressure conditions' fill: a sparse file on the root disk (its reads
# are neither disk reads nor vdb's), MemTotal + 25%.
FILL=/var/tmp/bench/fill FILL_EVICT=/var/tmp/bench/fill-evict
any_pressure=0
for c in "${conditions[@]}"; do ! is_pressure "$c" || any_pressure=1; done
if [ $any_pressure = 1 ]; then
	build_helper fill-evict $FILL_EVICT
	read -r _ memtotal_kb _ < <(grep '^MemTotal:' /proc/meminfo)
	truncate -s "$((memtotal_kb * 5 / 4))K" $FILL || die "cannot make the fill file"
fi
for w in "${workloads[@]}"; do
	gt=()
	while read -r f; do gt+=(-f "$A$f"); done <<<"${files[$w]}"
	log "ground truth of $w"
	# shellcheck disable=SC2086
	python3 "$JOB/ground_truth.py" --require-cold $([ $fa_ok = 0 ] || echo --require-fault-around) -o "$w.truth" \
		"${gt[@]}" -- chroot $A ${cmd[$w]} >"$w.gt.out" 2>&1 </dev/null ||
		die "ground truth of $w: $(tail -n 5 "$w.gt.out")"
done
# truth.json: the union, with chroot paths; W.paths: the stamped files of W
# (those it faulted), chroot paths.
python3 - $A truth.json "${workloads[@]}" <<'PY'
import json, sys
root, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
merged, files = None, {}
for name in names:
    t = json.load(open(name + ".truth"))
    if t["exit_status"]:
        sys.exit("%s exited %d in its ground-truth run" % (name, t["exit_status"]))
    if merged is None:
        merged = dict(t, command=[], files=[])
    merged["command"].append(t["command"])
    used = []
    for f in t["files"]:
        path = f["path"][len(root):]
        m = files.setdefault(path, dict(path=path, size=f["size"], cached_before=0, pages=set()))
        for first, last in f["pages"]:
            m["pages"].update(range(first, last + 1))
        if f["count"]:
            used.append(path)
    open(name + ".paths", "w").write("".join(p + "\n" for p in used))
for m in files.values():
    ranges = []
    for p in sorted(m["pages"]):
        if ranges and ranges[-1][1] == p - 1:
            ranges[-1][1] = p
        else:
            ranges.append([p, p])
    merged["files"].append(dict(m, count=len(m["pages"]), pages=ranges))
json.dump(merged, open(out, "w"))
PY
mapfile -t stamped < <(cat "${workloads[@]/%/.paths}" | sort -u)
((${#stamped[@]})) || die "no workload faulted a page of its files"

# Each workload's reference output (stamped nothing yet; from a cold page
# cache when a pressure condition runs, below).
run_output() {	# W ROOT: runs W in ROOT, its output to W.out (stdout, stderr, gcc's .s)
	# shellcheck disable=SC2086
	chroot "$2" ${cmd[$1]} >"$1.out" 2>&1 </dev/null || echo "exit $?" >>"$1.out"
	[ "$1" != gcc ] || cat "$2/tmp/out.s" >>"$1.out"
}
# A cold run: what it leaves cached is what a full machine must evict
# (make_cold), not only the files W maps (files[]): python3's modules are
# read(), not mapped, and a fill does not push them all out (Debian's 7.3
# kept them: python3 made 14 requests on a full machine, 34 with them
# evicted, 86 after a drop, whose other 52 are the file system's metadata:
# docs/bench/2026-12-07-full-machine-eviction.md).
cached_files() {	# ROOT: ROOT's regular files with pages cached, ROOT-relative
	(cd "$1" && find . -xdev \( -path ./learned -o -path ./dlearned \) -prune -o -type f -print0 |
		xargs -0 -r fincore --noheadings --raw --bytes --output RES,FILE) |
		awk '$1 > 0 { print substr($2, 2) }' |
		while IFS= read -r f; do printf '%b\n' "$f"; done	# --raw writes " " as \x20
}
declare -A ref=() evict=()
for w in "${workloads[@]}"; do
	# Only the page cache dropped: the dentries and inodes stay, so that the
	# walk of tree A after the run reads nothing from the throttled disk.
	[ $any_pressure = 0 ] || { sync; echo 1 >/proc/sys/vm/drop_caches; }
	run_output "$w" $A
	ref[$w]=$(sha256sum <"$w.out")
	cp "$w.out" "$OUT/$w.reference-output"
	[ $any_pressure = 1 ] || continue
	sync
	evict[$w]=$(cached_files $A) || die "cannot list what $w leaves cached"
	evict[$w]=$(printf '%s\n%s\n' "${files[$w]}" "${evict[$w]}" | sed '/^$/d' | sort -u)
	echo "$w: $(wc -l <<<"${evict[$w]}") files evicted on a full machine," \
		"$(wc -l <<<"${files[$w]}") of them those it maps" >>"$OUT/evict.txt"
	echo "${evict[$w]}" >"$OUT/evict.$w"
done

# --- The learned trees, B (the kernel's) and D (pbitmapd's): the same
# system as hard links (nothing copied but the data files, whose record is
# an attribute of the inode), made before A is stamped, each with its own
# inodes for every file of the set once stamped (add --break-links).
learned_tree() {	# ROOT
	mkdir -p "$1"
	for d in usr etc var root; do cp -al $A/$d "$1/"; done
	for l in bin sbin lib lib32 lib64 libx32; do [ -L $A/$l ] && cp -P $A/$l "$1/"; done
	mkdir -p "$1/proc" "$1/sys" "$1/dev" "$1/tmp"
	chroot_mounts "$1"
	for f in "${stamped[@]}"; do
		if ! head -c 4 "$A$f" | grep -q ELF; then
			cp -p "$A$f" "$1$f.copy" && mv "$1$f.copy" "$1$f"
		fi
	done
}
B=$A/learned D=$A/dlearned
# ROOT ARRAY: ROOT's files of the set stamped with empty bitmaps, and the
# programs the workloads exec with a plan area too, learned with them;
# ARRAY gets those programs' paths.
stamp_to_learn() {
	local -n progs=$2
	local w e
	pbitmap add -q --break-links "${stamped[@]/#/$1}" || die "pbitmap add in $1 failed"
	progs=()
	for w in "${workloads[@]}"; do
		for e in ${cmd[$w]%% *} $([ "$w" = gcc ] && echo "$cc1"); do
			progs+=("$1$(real "$e")")
		done
	done
	pbitmap add -q --break-links --plan-size "$PLAN_SIZE" "${progs[@]}" ||
		die "pbitmap add --plan-size in $1 failed"
}
# ROOT PROGRAM...: each PROGRAM's plan (pbitmap show), named in ROOT.
plans_of() {
	local root=$1 e
	shift
	for e; do
		echo "  ${e#"$root"}:"
		pbitmap show "$e" | sed -n '/^  plan /,$p' | sed 's/^/  /'
	done
}
# ROOT OUT: ROOT's learned bitmaps against the ground truth (jaccard.py), to OUT.
against_truth() {
	python3 - "$1" truth.json "$2.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[2]))
t["files"] = [dict(f, path=sys.argv[1] + f["path"]) for f in t["files"] if f["count"]]
json.dump(t, open(sys.argv[3], "w"))
PY
	python3 "$JOB/jaccard.py" "$2.json" >"$2" 2>&1 ||
		die "the learned tree $1 has a file without a bitmap: $(tail -n 3 "$2")"
}
if needs_b; then log "learned tree"; learned_tree $B; fi
if needs_d; then log "daemon-learned tree"; learned_tree $D; fi

# --- Stamp A with the ground truth.
log "stamping ${#stamped[@]} files"
pbitmap add -q --break-links "${stamped[@]/#/$A}" || die "pbitmap add in $A failed"
python3 - $A truth.json truth-A.json <<'PY'
import json, sys
t = json.load(open(sys.argv[2]))
for f in t["files"]:
    f["path"] = sys.argv[1] + f["path"]
json.dump(t, open(sys.argv[3], "w"))
PY
python3 "$JOB/stamp-truth.py" truth-A.json "${stamped[@]/#/$A}" >stamped.txt ||
	die "stamp-truth.py failed: $(tail -n 3 stamped.txt)"

# --- B learns: empty bitmaps, LEARN_RUNS cold runs of every workload with
# the kernel learning (files owned by root, runs by root: vm.pbitmap_learn=1),
# each run's set written at once (flush); learning off for the measurements.
if needs_b; then
	stamp_to_learn $B exes
	vm pbitmap_learn_window_ms 300000
	vm pbitmap_learn_interval_s 0
	vm pbitmap_learn_data_interval_s 0
	set_condition plan
	vm pbitmap_learn 1
	# plan-probed-dmeta: pbitmapd learns the metadata lists beside the
	# kernel (from each program's second run: the first tells it whose
	# runs may be followed)
	if has_condition plan-probed-dmeta; then
		daemon_start /var/tmp/bench/daemon-learn.conf
		[ "$(awk '$1 == "learning" { print $2 }' $DAEMON_STATUS)" = 1 ] ||
			die "pbitmapd cannot learn on $(uname -r): $(tail -n 3 "$OUT/daemon.log")"
	fi
	for ((i = 1; i <= LEARN_RUNS; i++)); do
		for w in "${workloads[@]}"; do
			log "learning run $i of $LEARN_RUNS: $w"
			drop
			# shellcheck disable=SC2086
			chroot $B ${cmd[$w]} >/dev/null 2>&1 </dev/null || true
			vm pbitmap_learn_flush 1
			[ -z "$DAEMON_PID" ] || sleep 0.5	# the exit's event reaches the daemon
		done
	done
	if [ -n "$DAEMON_PID" ]; then
		sleep 1	# the last list written
		log "pbitmapd beside the kernel: $(grep -E '^(learners|meta_learned|learn_written) ' $DAEMON_STATUS | tr '\n' ' ')"
		cp $DAEMON_STATUS "$OUT/daemon-b-learning-status"
		daemon_stop
	fi
	vm pbitmap_learn 0
	set_condition off
	against_truth $B learned.txt
fi

# --- D learns, as B does, but from pbitmapd: empty bitmaps and plan areas,
# the daemon running with learning on (its default policy: a file learns
# from its owner's runs, root's here), one uncounted run of every workload
# first (the daemon learns a program from its second exec: the first tells
# it the program's policy), then LEARN_RUNS cold runs of each; each run's
# generations written before the next run (its writers idle: pending 0).
if needs_d; then
	stamp_to_learn $D dexes
	daemon_idle() {	# the learning runs' writers done (10 s at most)
		local i
		for ((i = 0; i < 100; i++)); do
			[ "$(awk '$1 == "pending" { print $2 }' $DAEMON_STATUS)" = 0 ] && return 0
			sleep 0.1
		done
		die "pbitmapd's writers still busy after 10 s"
	}
	daemon_start /var/tmp/bench/daemon-learn.conf
	[ "$(awk '$1 == "learning" { print $2 }' $DAEMON_STATUS)" = 1 ] ||
		die "pbitmapd cannot learn on $(uname -r): $(tail -n 3 "$OUT/daemon.log")"
	for ((i = 0; i <= LEARN_RUNS; i++)); do
		for w in "${workloads[@]}"; do
			log "daemon learning run $i of $LEARN_RUNS: $w"
			drop
			# shellcheck disable=SC2086
			chroot $D ${cmd[$w]} >/dev/null 2>&1 </dev/null || true
			sleep 0.5	# the exit's event reaches the daemon
			daemon_idle
		done
	done
	cp $DAEMON_STATUS "$OUT/daemon-learning-status"
	daemon_stop
	against_truth $D dlearned.txt
fi

# --- The request floor of every workload, in each tree.
floor_of() {	# W ROOT: sets FLOOR and PFLOOR (the physical floor, 256 KiB a request)
	python3 - "$1" $A <<'PY' >"$1.floor-truth.json"
import json, sys
w, root = sys.argv[1], sys.argv[2]
t = json.load(open(w + ".truth"))  # this workload's own pages, chroot paths
t["files"] = [dict(f, path=f["path"][len(root):]) for f in t["files"] if f["count"]]
json.dump(t, sys.stdout)
PY
	FLOOR=$(python3 "$JOB/floor.py" --prefix "$2" --device $DEV "$1.floor-truth.json") ||
		die "floor.py failed for $1"
	PFLOOR=$(python3 "$JOB/floor.py" --prefix "$2" --physical-kb 256 "$1.floor-truth.json") ||
		die "floor.py --physical-kb failed for $1"
}
declare -A floor=() pfloor=() used=()
for w in "${workloads[@]}"; do
	# The pages W uses: its ground truth (waits.stp's coverage).
	used[$w]=$(python3 -c 'import json, sys; print(sum(f["count"] for f in json.load(open(sys.argv[1]))["files"]))' "$w.truth")
	floor_of "$w" $A; floor[$w,A]=$FLOOR pfloor[$w,A]=$PFLOOR
	if needs_b; then floor_of "$w" $B; floor[$w,B]=$FLOOR pfloor[$w,B]=$PFLOOR; fi
	if needs_d; then floor_of "$w" $D; floor[$w,D]=$FLOOR pfloor[$w,D]=$PFLOOR; fi
done

{
	echo "disk model: $DISK; device $DEV, max request $(<"/sys/block/$DEV/queue/max_sectors_kb") KiB, read_ahead_kb $ra0," \
		"optimal_io_size $io_opt, rotational $(<"/sys/block/$DEV/queue/rotational")"
	echo "kernel: $(uname -r); harness pinned: $pinned"
	[ $fa_ok = 1 ] || echo "fault_around_bytes: refused by the kernel (debugfs), left at its setting"
	for w in "${workloads[@]}"; do
		echo "$w: ${desc[$w]}: $(wc -l <"$w.paths") files stamped; floor ${floor[$w,A]} requests (physical ${pfloor[$w,A]})"
	done
	echo "ground truth, stamped (path, pages faulted, granules marked):"
	sed 's/^/  /' stamped.txt
	if needs_b; then
		echo "learned over $LEARN_RUNS runs each, against the ground truth (granules):"
		sed 's/^/  /' learned.txt
		echo "start-up plans learned in the same runs (pbitmap show, run outside the chroot: a file \"replaced\" is the root disk's, not the tree's):"
		plans_of $B "${exes[@]}"
	fi
	if needs_d; then
		echo "learned by pbitmapd over $LEARN_RUNS runs each, against the ground truth (granules):"
		sed 's/^/  /' dlearned.txt
		echo "its counters after learning: $(grep -E '^learn' "$OUT/daemon-learning-status" | tr '\n' ' ')"
		echo "start-up plans pbitmapd learned (pbitmap show):"
		plans_of $D "${dexes[@]}"
	fi
} >"$OUT/setup.txt"
cp truth.json "$OUT/truth.json"

# --- The runs.  Between dropping the caches and reading the counters only
# shell builtins and the pinned harness run.
#
# /proc files are read in one sequential pass (mapfile), never with `while
# read ... </proc/FILE`: bash's read seeks back to each line's end, a seek
# in a seq_file regenerates the text, and a counter that changed digits
# meanwhile tears the line being looked for.  That made this harness exit
# with status 1 and no message after 597 of 800 runs (2026-11-27); on the
# host, with nr_dirty changing width, 6 of 3000 such lookups missed
# (kernel-patch/tests/coldlib.sh's proc_lines() has the same rule).
proc_value() {	# FILE KEY: sets VAL to the first field after KEY
	local l
	local -a lines
	mapfile -t lines <"$1"
	for l in "${lines[@]}"; do
		[ "${l%% *}" = "$2" ] || continue
		read -r VAL _ <<<"${l#"$2"}"
		return 0
	done
	die "no $2 in $1"
}
vmstat_get() {	# NAME: sets VAL
	proc_value /proc/vmstat "$1"
}
series_counter() {	# NAME: the series' vmstat counter, 0 on a stock kernel
	VAL=0
	[ $series = 0 ] || vmstat_get "$1"
}
# What pbitmapd did for a run (daemon.txt): its counters that say whether
# the exec was served, from a plan or per file, and what was skipped; and
# cpu_ms, its CPU from the program's start to the end of the run's reads,
# its children's included (each waited for, at most 3 s: a data file's
# child may wait up to 2 s for its exec's; clock ticks: 10 ms).  The
# counters are read once the daemon has stopped: SIGTERM writes them whole,
# where the running daemon's file may be a second old.
DAEMON_COUNTERS="execs prefetched plans files extents bytes cached_bytes opens own_opens skip_handle program_to_kernel libraries_to_kernel plans_to_kernel data_to_kernel data_prefetched data_after_exec data_skip_gone skip_recent skip_busy skip_pressure skip_gone skip_mismatch skip_fs skip_denied skip_budget skip_failed held held_timeout exec_cpu_us open_cpu_us child_cpu_us child_sys_us meta_read meta_stale meta_bytes"
daemon_report() {	# LABEL TICKS-AT-THE-START; stops the daemon
	local k line=$1
	daemon_reaped "$1"
	daemon_cpu_ticks
	daemon_stop
	for k in $DAEMON_COUNTERS; do daemon_counter "$k"; line+=" $k=$VAL"; done
	echo "$line cpu_ms=$(((TICKS - $2) * 1000 / CLK_TCK))" >>"$OUT/daemon.txt"
}
CLK_TCK=$(getconf CLK_TCK) || die "getconf CLK_TCK failed"
cached_kb() {	# sets KB
	proc_value /proc/meminfo Cached:
	KB=$VAL
}
drain() {	# reads still in flight belong to the run that started them
	local r w t0=${EPOCHREALTIME/./}
	while read -r r w </sys/block/$DEV/inflight && ((r + w > 0)); do
		((${EPOCHREALTIME/./} - t0 < 5000000)) || return 0
	done
}
evict_list() {	# W ROOT: the files a cold run of W caches, as ROOT has them
	local f
	EVICT=()
	while IFS= read -r f; do
		if [ -f "$2$f" ]; then
			EVICT+=("$2$f")
		elif [ "$2" = $A ]; then	# listed in A: a name the list got wrong
			die "$1: $A$f, listed as cached by its cold run, is not a file"
		fi	# B and D have A's usr, etc, var and root only
	done <<<"${evict[$1]}"
}
preload_list() {	# W [ROOT]: the files W maps, in the tree ROOT (default A)
	local f root=${2:-$A}
	PRELOAD=()
	while read -r f; do PRELOAD+=("$root$f"); done <<<"${files[$1]}"
}
run_of() {	# W C: sets ROOT (the tree C runs in) and RUN (W's command line under C)
	ROOT=$A
	in_tree_b "$2" && ROOT=$B
	in_tree_d "$2" && ROOT=$D
	RUN=(chroot "$ROOT")
	[ "$2" = user ] && RUN+=(/usr/local/bin/pbitmap-run -q --)
	[ "$2" = audit ] && RUN+=(/usr/bin/env LD_AUDIT=/usr/local/lib/pbitmap/pbitmap-audit.so)
	[ "$2" = plan-probed-meta ] && RUN=("$META_WILLNEED" /dev/$DEV "$PWD/meta.$1" "${RUN[@]}")
	# shellcheck disable=SC2206
	RUN+=(${cmd[$1]})
}
output_ok() {	# W ROOT: W.out, gcc's .s appended, is the reference output
	[ "$1" != gcc ] || cat "$2/tmp/out.s" >>"$1.out"
	[ "$(sha256sum <"$1.out")" = "${ref[$1]}" ]
}
busy_beside() {	# MS: a CPU kept busy for MS ms from now, in the background
	local end=$((${EPOCHREALTIME/./} + $1 * 1000))
	{ while ((${EPOCHREALTIME/./} < end)); do :; done; } &
	BUSY_PID=$!
}
make_cold() {	# W C K ROOT: a drop, or for a pressure condition a full machine
	local line
	if ! is_pressure "$2"; then
		drop
		return 0
	fi
	# pbitmap is off here: fill-evict maps the files for mincore.
	sync
	evict_list "$1" "$4"
	line=$($FILL_EVICT $FILL "${EVICT[@]}") ||
		die "$1 $2 $3: fill-evict failed: the files not evicted, or the fill not read"
	echo "$1 $2 $3 $line" >>"$OUT/pressure.txt"
	[ "$2" != pressure-off-cold ] && return 0
	echo 2 >/proc/sys/vm/drop_caches && blockdev --flushbufs /dev/$DEV ||
		die "$1 $2 $3: cannot drop the metadata caches"
	proc_value /proc/meminfo MemFree:
	echo "$1 $2 $3 after the metadata drop: MemFree $VAL kB" >>"$OUT/pressure.txt"
}
one_run() {	# W C K
	local w=$1 c=$2 root tree=A r0 s0 r1 s1 c0 c1 p0 p1 q0 q1 d0 maj wall status user sys ok
	local -a run
	run_of "$w" "$c"
	root=$ROOT run=("${RUN[@]}")
	[ "$root" = "$B" ] && tree=B
	[ "$root" = "$D" ] && tree=D
	set_condition off
	drain
	if [ "$c" = warm ]; then
		"${run[@]}" >/dev/null 2>&1 </dev/null || true
	else
		make_cold "$w" "$c" "$3" "$root"
	fi
	set_condition "$c"
	# pbitmapd after the drop and the fill (they would have it read
	# ahead the data files they open), its own files on the root disk
	! is_daemon "$c" || daemon_start "$(daemon_conf "$c")"
	daemon_cpu_ticks; d0=$TICKS
	cached_kb; c0=$KB
	series_counter pbitmap_prefetch; p0=$VAL
	series_counter pbitmap_pages_submitted; q0=$VAL
	rq_trace on
	rm -f time.out
	read -r r0 _ s0 _ </sys/block/$DEV/stat
	if [ "$c" = preload ]; then
		preload_list "$w"
		$TIMED time.out bash -c \
			'n=$1; shift; run=("${@:1:n}"); shift "$n"; cat -- "$@" >/dev/null && exec "${run[@]}"' \
			preload ${#run[@]} "${run[@]}" "${PRELOAD[@]}" >"$w.out" 2>&1 </dev/null || true
	else
		[[ $c != off-busy* ]] || busy_beside "${c#off-busy}"
		$TIMED time.out "${run[@]}" >"$w.out" 2>&1 </dev/null || true
		[[ $c != off-busy* ]] || wait "$BUSY_PID"
	fi
	drain
	read -r r1 _ s1 _ </sys/block/$DEV/stat
	rq_trace off "$w" "$c" "$3"
	cached_kb; c1=$KB
	series_counter pbitmap_prefetch; p1=$VAL
	series_counter pbitmap_pages_submitted; q1=$VAL
	if is_daemon "$c"; then
		daemon_report "$w $c $3" "$d0"	# stops it
	fi
	set_condition off
	read -r maj wall status user sys <time.out || die "$w $c $3: timed wrote no line"
	ok=false
	output_ok "$w" "$root" && [ "$status" = 0 ] && ok=true
	[ $ok = true ] || cp "$w.out" "$OUT/bad-output.$w.$c.$3"
	echo "$w,$c,$3,$DISK,$((r1 - r0)),$(((s1 - s0) * 512)),$maj,$(((c1 - c0))),$wall,$ok,${floor[$w,$tree]},$status,$((p1 - p0)),$((q1 - q0)),${pfloor[$w,$tree]},$user,$sys" >>"$OUT/bench.csv"
}
# --- plan-probed-meta: each workload's metadata blocks, from one cold
# plan-probed run traced by filemap:mm_filemap_add_to_page_cache.  The
# block device's own mapping is told from the files' by a page read
# through it first (the disk's last block, which no run reads).
META_WILLNEED=/var/tmp/bench/meta-willneed
meta_list() {	# W: writes meta.W ("OFFSET LENGTH" lines, bytes of /dev/DEV)
	local ev=$TRACEFS/events/filemap/mm_filemap_add_to_page_cache last gap_kb=$probe_gap
	((gap_kb > 0)) || gap_kb=128
	last=$(($(blockdev --getsize64 /dev/$DEV) / 4096 - 1))
	drop
	echo 0 >$TRACEFS/tracing_on && echo >$TRACEFS/trace && echo 1 >$ev/enable &&
		echo 1 >$TRACEFS/tracing_on || die "meta_list: cannot trace $ev"
	dd if=/dev/$DEV of=/dev/null bs=4096 skip=$last count=1 status=none ||
		die "meta_list: cannot read /dev/$DEV's last block"
	set_condition plan-probed
	run_of "$1" plan-probed
	"${RUN[@]}" >/dev/null 2>&1 </dev/null || true
	set_condition off
	echo 0 >$TRACEFS/tracing_on; echo 0 >$ev/enable
	grep -v '^#' $TRACEFS/trace >"meta.$1.trace"
	python3 - "meta.$1.trace" "$((last * 4096))" "$((gap_kb * 1024))" "$JOB" >"meta.$1" 2>"meta.$1.err" <<'PY' ||
import re, sys
sys.path.insert(0, sys.argv[4])
from floor import merge
calib, gap = int(sys.argv[2]), int(sys.argv[3])
EV = re.compile(r'dev (\d+:\d+) ino ([0-9a-f]+) pfn=\S+ ofs=(\d+) order=(\d+)')
events = [m.groups() for m in map(EV.search, open(sys.argv[1])) if m]
keys = {(d, i) for d, i, o, _ in events if int(o) == calib}
if len(keys) != 1:
    sys.exit("the block device's mapping not found among %d events" % len(events))
pages = [(int(o), int(o) + (4096 << int(n))) for d, i, o, n in events
         if (d, i) in keys and int(o) != calib]
if not pages:
    sys.exit("no metadata page read")
for a, b in merge(pages, gap):
    print(a, b - a)
PY
		die "meta_list $1: $(tail -n 1 "meta.$1.err")"
	log "metadata of $1: $(awk '{ n++; b += $2 } END { print n " ranges, " b / 1024 " KiB" }' "meta.$1")" \
		"(pages joined across $gap_kb KiB)"
}
if has_condition plan-probed-meta; then
	need_tracefs plan-probed-meta
	build_helper meta-willneed $META_WILLNEED
	for w in "${workloads[@]}"; do meta_list "$w"; done
fi

echo "workload,condition,run,disk,read_requests,read_bytes,major_faults,cache_growth_kb,wall_s,output_ok,floor_requests,exit_status,prefetches,pages_submitted,physical_floor_requests,user_s,sys_s" >"$OUT/bench.csv"
for w in "${workloads[@]}"; do
	n=$RUNS
	[ "$w" = gcc ] && n=$GCC_RUNS
	for c in "${conditions[@]}"; do
		for ((k = 1; k <= n; k++)); do echo "$w $c $k"; done
	done
done | shuf >order
total=$(wc -l <order) n=0 t_runs=$EPOCHSECONDS
log "setup done in $((t_runs - t_start)) s; $total runs"
echo "0 $total 0" >"$OUT/progress"
series_counter pbitmap_rejected; rejected0=$VAL
while read -r w c k; do
	one_run "$w" "$c" "$k"
	n=$((n + 1))
	echo "$n $total $((EPOCHSECONDS - t_runs))" >"$OUT/progress"
done <order
series_counter pbitmap_rejected
echo "records rejected by the kernel during the runs: $((VAL - rejected0))" >>"$OUT/setup.txt"
echo "runs: $total in $((EPOCHSECONDS - t_runs)) s; set-up $((t_runs - t_start)) s" >>"$OUT/setup.txt"

# --- Where the cold starts wait (WAITS=1): one run of each (workload,
# condition) under waits.stp, its target the chroot'ed workload (staprun -c),
# the caches dropped (or, for a pressure condition, the machine filled and
# the files evicted, as for its timed runs) before staprun loads the module
# (its files are on the root disk, not the bench disk).  Conditions that are
# not a cold start of the files (warm, preload) and nora (no read-around: a
# different fault count) are left out.
WAIT_CAUSES="fault-miss fault-inflight pbitmap-record pbitmap-plan read exec mmap open stat"
# The bench disk's dev_t as the kernel has it (MKDEV: major << 20 | minor):
# waits.stp counts that disk's read requests only.
read -r DEV_MAJ DEV_MIN < <(stat -L -c '%t %T' /dev/$DEV) || die "cannot stat /dev/$DEV"
DEV_T=$(((16#$DEV_MAJ << 20) | 16#$DEV_MIN))
waits_run() {	# W C
	local w=$1 c=$2 root out err t0 t1 skipped ok r0 r1
	run_of "$w" "$c"
	root=$ROOT
	out=$OUT/waits/$w.$c.txt err=$OUT/waits/$w.$c.err
	set_condition off
	drain
	make_cold "$w" "$c" waits "$root"
	set_condition "$c"
	! is_daemon "$c" || daemon_start "$(daemon_conf "$c")"
	t0=${EPOCHREALTIME/./}
	# staprun -c splits its command with wordexp(3), which takes no
	# redirections: a script does them.
	printf '#!/bin/bash\nexec %s >%q 2>&1 </dev/null\n' "$(printf '%q ' "${RUN[@]}")" "$PWD/$w.out" >waits-cmd.sh
	read -r r0 _ </sys/block/$DEV/stat
	staprun -o "$out" -c "/bin/bash $PWD/waits-cmd.sh" "$JOB/stap_waits.ko" dev=$DEV_T 2>"$err" ||
		die "waits.stp for $w $c failed: $(tail -n 3 "$err")"
	t1=${EPOCHREALTIME/./}
	drain
	read -r r1 _ </sys/block/$DEV/stat
	daemon_stop
	set_condition off
	ok=false
	output_ok "$w" "$root" && ok=true
	skipped=$(sed -n 's/.*skipped probes: \([0-9]*\).*/\1/p' "$err" | tail -n 1)
	python3 - "$out" "$w" "$c" "$DISK" "${used[$w]}" "$(((t1 - t0) / 1000))" "${skipped:-0}" "$ok" "$WAIT_CAUSES" \
		"$((r1 - r0))" <<'PY' >>"$OUT/waits.csv"
import sys
path, w, c, disk, used, ms, skipped, ok, causes, disk_reads = sys.argv[1:]
faults, waits, files, requests, merged = {}, {}, [], [], None
for line in open(path):
    kind, _, rest = line.partition(" ")
    kv = dict(f.split("=", 1) for f in rest.split() if "=" in f)
    if kind == "faults":
        faults = kv
    elif kind == "wait":
        waits[kv["cause"]] = int(kv["us"])
    elif kind == "miss":
        files.append("%s:%s" % (kv["file"], kv["pages"]))
    elif kind == "requests" and "cause" in kv:
        requests.append("%s:%s" % (kv["cause"], kv["n"]))
    elif kind == "requests" and "merged" in kv:
        merged = kv["merged"]
if not faults:
    sys.exit("waits.stp printed no faults line in " + path)
if merged is None:
    sys.exit("waits.stp printed no requests merged= line in " + path)
requests.append("merged:" + merged)
known = causes.split()
row = [w, c, "0", disk, used, faults["miss"], faults["inflight"], faults["readahead"], faults["cached"]]
row += ["%.1f" % (waits.get(k, 0) / 1000) for k in known]
row.append("%.1f" % (sum(v for k, v in waits.items() if k not in known and k != "sleep") / 1000))
row += ["%.1f" % (waits.get("sleep", 0) / 1000), ms, skipped, ok, " ".join(files[:12])]
row += [disk_reads, " ".join(requests)]
print(",".join(row))
PY
}
# Every CPU but cpu0 offline (0) or online again (1).  A systemtap handler
# takes the locks of the globals it uses; when another CPU holds one for
# 1 ms (MAXTRYLOCK), the probe is skipped and waits.stp's counts fall
# short.  A guest vCPU is a host thread, and a host that runs something
# else on its core while that vCPU holds a lock stalls the other: CI on
# e0a02b1 saw 4 probes skipped under `plan`, and with two CPU hogs on the
# host the smoke run skipped 2-4 per row (8, and an overload abort, with a
# 100 ms MAXTRYLOCK).  On one CPU a handler, which runs with preemption
# off, never waits for a lock.  The timed runs keep both CPUs.
cpus_online() {	# 0|1
	local c
	for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[ -e "$c" ] || continue
		echo "$1" >"$c" || die "cannot write $1 to $c"
	done
}
if [ "$WAITS" = 1 ]; then
	log "wait attribution: waits.stp, one run per (workload, condition), on one CPU"
	cpus_online 0
	mkdir -p "$OUT/waits"
	{
		printf 'workload,condition,run,disk,used_pages,misses,inflight_faults,readahead_faults,cached_faults'
		for k in $WAIT_CAUSES; do printf ',wait_%s_ms' "${k//-/_}"; done
		printf ',wait_other_ms,sleep_ms,stap_wall_ms,skipped_probes,output_ok,miss_files'
		printf ',disk_read_requests,read_requests_by_cause\n'
	} >"$OUT/waits.csv"
	for w in "${workloads[@]}"; do
		for c in "${conditions[@]}"; do
			case $c in nora | warm | preload) continue ;; esac
			waits_run "$w" "$c"
		done
	done
	cpus_online 1
fi

# --- The warm-exec microbenchmark: what pbitmap costs an exec with
# everything cached.  A small dynamic program, one copy stamped (two pages
# marked), one not, exec'd 1000 times per loop, pbitmap off and on (the
# series' kernel) or pbitmapd stopped and running (its defaults; any
# kernel: the exec does not wait for it, but its event and its work share
# the CPUs), REPEATS loops each in alternating order; microseconds per exec.
# Beside each timed loop, a traced one (TRACED_EXECS execs, the same
# program and state): wall time under TCG hides costs below about 20%, so
# the cost is also taken from the kernel's own clock and counters, as
# exec_traced() says; the timed loops run with tracing off.
if [ "$EXEC_BENCH" = 1 ]; then
	log "warm-exec microbenchmark"
	mkdir -p /var/tmp/exec && cd /var/tmp/exec
	printf '#include <stdio.h>\nconst char pad[256 << 10] = { 1 };\nint main(void) { puts("warm"); return pad[0] - 1; }\n' >p.c
	gcc -O2 -o unstamped p.c && cp unstamped stamped
	pbitmap add -q stamped && pbitmap set -q --pages 0-1 stamped
	echo "pbitmap,program,repeat,execs,us_per_exec,first_insn_us,daemon_cpu_us" >"$OUT/exec.csv"
	loop() {	# program: sets NS for 1000 execs
		local t0 i
		t0=${EPOCHREALTIME/./}
		for ((i = 0; i < 1000; i++)); do "./$1" >/dev/null; done
		NS=$(((${EPOCHREALTIME/./} - t0) * 1000))
	}
	TRACED_EXECS=200
	T=/sys/kernel/tracing
	[ -e $T/events/raw_syscalls/sys_enter ] && [ -e $T/events/exceptions/page_fault_user ] ||
		die "warm-exec: no raw_syscalls:sys_enter or exceptions:page_fault_user in $T"
	# program: sets FIRST_US, the median over TRACED_EXECS execs of the time
	# from execve's entry (raw_syscalls:sys_enter, id 59) to the program's
	# first instruction (the first instruction-fetch fault of that task
	# after it, exceptions:page_fault_user with X86_PF_INSTR: a new image
	# has nothing mapped, so ld.so's entry faults), both on the trace
	# clock; and DAEMON_US, the daemon's CPU per exec over the loop, from
	# /proc (0 with no daemon).  Everything pbitmap or pbitmapd adds to an
	# exec lies between the two events: the plan and record reads at exec,
	# a held exec's wait, the daemon's event work on the other CPU.
	exec_traced() {
		local i t0 t1
		daemon_cpu_ticks
		t0=$TICKS
		echo 0 >$T/tracing_on
		: >$T/trace
		echo 8192 >$T/buffer_size_kb
		echo global >$T/trace_clock	# the two events may be on two CPUs
		echo 'id == 59' >$T/events/raw_syscalls/sys_enter/filter
		echo 'error_code & 16' >$T/events/exceptions/page_fault_user/filter
		echo 1 >$T/events/raw_syscalls/sys_enter/enable
		echo 1 >$T/events/exceptions/page_fault_user/enable
		echo 1 >$T/tracing_on
		for ((i = 0; i < TRACED_EXECS; i++)); do "./$1" >/dev/null; done
		echo 0 >$T/tracing_on
		echo 0 >$T/events/raw_syscalls/sys_enter/enable
		echo 0 >$T/events/exceptions/page_fault_user/enable
		echo 0 >$T/events/raw_syscalls/sys_enter/filter
		echo 0 >$T/events/exceptions/page_fault_user/filter
		sleep 1		# the daemon reaps its children
		daemon_cpu_ticks
		t1=$TICKS
		DAEMON_US=$(((t1 - t0) * 1000000 / CLK_TCK / TRACED_EXECS))
		FIRST_US=$(awk '
			{
				pid = $1; sub(/.*-/, "", pid)	# comm-PID
				for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) break
				ts = substr($i, 1, length($i) - 1)
			}
			$(i + 1) == "sys_enter:" { start[pid] = ts; next }
			$(i + 1) == "page_fault_user:" && (pid in start) {
				printf "%.1f\n", (ts - start[pid]) * 1e6; delete start[pid]
			}' $T/trace | sort -n | awk -v want=$TRACED_EXECS '
			{ us[++n] = $1 }
			END {
				if (n < want * 0.9) { print "short " n; exit }
				printf "%.0f\n", n % 2 ? us[(n + 1) / 2] : (us[n / 2] + us[n / 2 + 1]) / 2
			}')
		echo local >$T/trace_clock	# after reading: a new clock empties the buffer
		[[ $FIRST_US =~ ^[0-9]+$ ]] ||
			die "warm-exec: the trace pairs too few execs with a first instruction ($FIRST_US of $TRACED_EXECS): events lost?"
	}
	exec_state() {	# off | on | daemon
		[ $series = 0 ] || vm pbitmap_enabled "$([ "$1" = on ] && echo 1 || echo 0)"
		if [ "$1" = daemon ]; then daemon_start /var/tmp/bench/daemon-read.conf; else daemon_stop; fi
	}
	states=(off on)
	[ $series = 1 ] || states=(off)
	! needs_daemon || states+=(daemon)
	for s in "${states[@]}"; do exec_state "$s"; ./stamped >/dev/null; ./unstamped >/dev/null; done
	for ((k = 1; k <= $EXEC_REPEATS; k++)); do
		for s in "${states[@]}"; do
			exec_state "$s"
			for p in stamped unstamped; do
				loop $p
				exec_traced $p
				echo "$s,$p,$k,1000,$((NS / 1000000)).$(printf %03d $((NS / 1000 % 1000))),$FIRST_US,$DAEMON_US" >>"$OUT/exec.csv"
			done
		done
	done
	exec_state off
fi
# --- What the guest counted on the bench disk over the whole boot, set-up
# included, for bench-run.sh to set beside what QEMU counted: the host reads
# its counters once host-sync appears and answers with host-synced (at most
# 30 s; without an answer the host's side is missing, nothing fails).
read -r ios merges sectors _ </sys/block/$DEV/stat
echo "$ios $merges $((sectors * 512))" >"$OUT/guest-blockstats"
: >"$OUT/host-sync"
for ((i = 0; i < 300; i++)); do [ -e "$OUT/host-synced" ] && break; sleep 0.1; done
log "done in $((EPOCHSECONDS - t_start)) s"
