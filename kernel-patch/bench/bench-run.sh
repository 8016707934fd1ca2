#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kernel-patch/bench/bench-run.sh: `make bench` on the host.  One guest boot
# per disk model, each running bench-job.sh on a fresh copy of the guest
# image attached as /dev/vdb; then the CSV, the tables and the plots.
#
#   bench-run.sh OUTDIR SCHED_I PACK_DIR PACKLOOKUP
#
# Environment (make bench passes them through):
#   RUNS        runs per (workload, condition) and disk (10)
#   GCC_RUNS    runs of the gcc workload, about 30 s each under TCG (3)
#   LEARN_RUNS  cold runs the kernel learns from before `learned` (3)
#   WORKLOADS   gcc gdb python3 emacs pack
#   CONDITIONS  nora off slurp early exec full learned plan user audit preload
#               warm pressure-off pressure pressure-plan
#   DISK        iops150 ebs latency none: QEMU throttling.iops-total=150;
#               ebs, an AWS gp3 volume slowed down as TCG slows the CPU
#               (3000 operations and 125 MiB/s, both divided by 20: 150
#               operations a second, a request above 256 KiB counted as
#               size / 256 KiB of them, throttling.iops-size, and 6.25
#               MiB/s); every
#               read delayed DELAY_MS (4) by nbdkit's delay filter, requests
#               overlapping; unthrottled.  Also (not by default) bytes150:
#               150 operations a second where a request counts one per
#               started 256 KiB (throttling.iops-size, as EBS counts I/O),
#               and 32 MiB/s (throttling.bps-total): a disk that charges
#               bytes as well as requests; ebs-opt: ebs whose virtio-blk
#               device reports the 256 KiB it counts an operation per as
#               its optimal I/O size (opt_io_size), which the kernel's
#               join gap and readahead (at least 2 x io_opt) then see
#   WAITS       1: after the timed runs, one run of each (workload,
#               condition) under stap/waits.stp (where the run waits, and
#               the first touches that missed); WAITS_KO is the module
#               built for KERNEL (make bench builds build/stap/stap_waits.ko)
#   EXEC_BENCH  1: the warm-exec microbenchmark, in the first disk's boot;
#               EXEC_REPEATS loops of 1000 execs per case (3)
#   BENCH_KERNEL  patched (KERNEL, the series), stock-6.12 (Debian's 6.12 as
#               it ships, STOCK_DIR: make stock-kernel) or stock-7.3 (its
#               backport of mainline 7.3, STOCK73_DIR: make stock-kernel-7.3);
#               a stock kernel runs only the conditions that need nothing of
#               the series (off, pbitmapd's but daemon-b, pressure-off,
#               pressure-off-cold, user,
#               audit, preload, warm, nora), without WAITS; its EXEC_BENCH
#               (with a daemon condition) measures pbitmapd's cost; or host:
#               no guest, the job run on this machine's own kernel with its
#               CPU as it is (no TCG), the bench disk a loop device (direct
#               I/O) mounted at /bench, iops150 modelled by cgroup v1's
#               blk-throttle at the root (150 reads and 150 writes a
#               second: blk-throttle counts bios, QEMU the requests they
#               merge into), or none; the conditions a stock kernel runs.
#               It takes the machine: caches dropped, pbitmapd watching
#               every local filesystem; run nothing else meanwhile
#   PBITMAPD    the daemon of the daemon conditions (build/pbitmapd)
#   SSD_READ_AHEAD_KB  set: the bench disk made non-rotational and its
#               read_ahead_kb this (128: what a user's SSD gets), at the job's
#               start; virtio-blk is rotational, and 7.x gives a rotational
#               disk without an optimal I/O size twice its largest request
#               (8 MiB here) where 6.12 gives 128
#   DAEMON_FAULT_AROUND  PBITMAP_DAEMON_LEARN_FAULT_AROUND while pbitmapd
#               learns tree D (windows, the daemon's default when unset;
#               keep; off)
#   KEEP_DISK   1: keep the bench disk after the boot, OUTDIR/disk-DISK.img
#               (sparse, the image's size), to read its learned trees
#   RQ_TRACE    1: each timed run's block events on the bench disk (bios
#               queued, by task; requests issued), OUTDIR/DISK/rq-trace/,
#               summed by kernel-patch/bench/rq-by-task.py
#   RQ_STACK    1 (with RQ_TRACE=1): also each new request's kernel stack
#               (block:block_getrq with a stacktrace trigger), to tell
#               apart what made the requests one system call made;
#               summed by cause by kernel-patch/bench/rq-stacks.py
# KERNEL, KBUILD, IMAGE as for kernel-patch/scripts/vm.  Writes
# OUTDIR/results.csv (every run of every disk), OUTDIR/exec.csv,
# OUTDIR/DISK/ (each boot's set-up report and console), OUTDIR/blockstats.txt
# (the bench disk's reads over each boot, as the guest and as QEMU counted
# them), OUTDIR/BENCH-table.md and OUTDIR/plots/*.png (report.py, from the
# CSV alone).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
die() { echo "bench: $*" >&2; exit 1; }
[ $# = 4 ] || die "usage: bench-run.sh OUTDIR SCHED_I PACK_DIR PACKLOOKUP"
OUTDIR=$1 SCHED_I=$2 PACK_DIR=$3 PACKLOOKUP=$4
RUNS=${RUNS:-10} GCC_RUNS=${GCC_RUNS:-3} LEARN_RUNS=${LEARN_RUNS:-3}
WORKLOADS=${WORKLOADS:-gcc gdb python3 emacs pack}
CONDITIONS=${CONDITIONS:-nora off slurp early exec full learned plan user audit preload warm pressure-off pressure pressure-plan}
DISK=${DISK:-iops150 ebs latency none} DELAY_MS=${DELAY_MS:-4} EXEC_BENCH=${EXEC_BENCH:-1}
IMAGE=${IMAGE:-$TOP/build/guest.img}
BENCH_KERNEL=${BENCH_KERNEL:-patched} PBITMAPD=${PBITMAPD:-$TOP/build/pbitmapd}
WAITS=${WAITS:-0} WAITS_KO=${WAITS_KO:-$TOP/build/stap/stap_waits.ko}
BLKIO_V1=/sys/fs/cgroup/blkio
# Whether a condition runs pbitmapd (daemon, pressure-daemon, daemon-b, ...).
daemon=0
for c in $CONDITIONS; do case $c in daemon | *-daemon | daemon-* | *-daemon-*) daemon=1 ;; esac; done
# The kernel booted: the series', or one of Debian's as it ships.
kernel_env=(KERNEL="${KERNEL:-$TOP/build/kbuild/arch/x86/boot/bzImage}" KBUILD="${KBUILD:-$TOP/build/kbuild}")
case $BENCH_KERNEL in
patched) ;;
stock-6.12 | stock-7.3)
	sdir=${STOCK_DIR:-$TOP/build/stock}
	[ "$BENCH_KERNEL" = stock-6.12 ] || sdir=${STOCK73_DIR:-$TOP/build/stock-7.3}
	for f in vmlinuz initrd.img release; do
		[ -f "$sdir/$f" ] || die "BENCH_KERNEL=$BENCH_KERNEL: no $sdir/$f (make stock-kernel, make stock-kernel-7.3)"
	done
	kernel_env=(KERNEL="$sdir/vmlinuz" INITRD="$sdir/initrd.img" VM_RELEASE="$(<"$sdir/release")")
	# Single-threaded TCG, as make check's stock guest (kernel.mk): pbitmapd
	# attaches its fentry program on handle_mm_fault at every start, and
	# under multi-threaded TCG a vCPU ran a stale translation of the
	# int3-patched text (Oops: int3 at handle_mm_fault+0x5) in the CI run of
	# 1757b6e and in a stock 6.12 bench boot of 5b8abb8.  Requests are the
	# same; wall times are slower in both conditions alike.
	kernel_env+=(VM_TCG_THREAD="${VM_TCG_THREAD:-single}")
	# waits.stp is built for the series' kernel; the warm-exec
	# microbenchmark measures pbitmapd there, if it runs
	[ "$WAITS" = 0 ] || echo "bench: BENCH_KERNEL=$BENCH_KERNEL: no wait attribution (waits.stp is built for the series' kernel)"
	WAITS=0
	[ $daemon = 1 ] || EXEC_BENCH=0 ;;
host)
	[ "$(id -u)" = 0 ] || die "BENCH_KERNEL=host needs root (loop device, mounts, drop_caches)"
	[ ! -e /proc/sys/vm/pbitmap_enabled ] ||
		die "BENCH_KERNEL=host: $(uname -r) is a pbitmap kernel; the host mode is for stock kernels"
	for d in $DISK; do
		case $d in iops150 | none) ;; *) die "BENCH_KERNEL=host: disk model $d; the host models iops150 and none only" ;; esac
	done
	[[ " $DISK " != *" iops150 "* ]] || [ -w $BLKIO_V1/blkio.throttle.read_iops_device ] ||
		die "BENCH_KERNEL=host: no cgroup v1 blk-throttle at $BLKIO_V1 for the iops150 model"
	! mountpoint -q /bench || die "BENCH_KERNEL=host: /bench is mounted (an earlier run's? umount -R /bench)"
	[ "$WAITS" = 0 ] || echo "bench: BENCH_KERNEL=host: no wait attribution (waits.stp is built for the series' kernel)"
	WAITS=0
	[ $daemon = 1 ] || EXEC_BENCH=0 ;;
*) die "BENCH_KERNEL=$BENCH_KERNEL: patched, stock-6.12, stock-7.3 or host" ;;
esac
case $WAITS in
0) ;;
1) [ -f "$WAITS_KO" ] && [ -f "${WAITS_KO%.ko}.kernel-build-id" ] ||
		die "WAITS=1: no $WAITS_KO and ${WAITS_KO%.ko}.kernel-build-id beside it (make stap builds them)"
	stap_version=$(dpkg-query -W -f='${Version}' systemtap 2>/dev/null) ||
		die "WAITS=1: systemtap is not installed (make deps)" ;;
*) die "WAITS=$WAITS: 0 or 1" ;;
esac
for v in RUNS GCC_RUNS LEARN_RUNS DELAY_MS; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v=${!v}: not a number"
done
((RUNS >= 2)) || die "RUNS=$RUNS: the statistics need at least 2 runs"
for d in $DISK; do
	case $d in iops150 | ebs | ebs-opt | bytes150 | latency | none) ;;
	*) die "DISK: unknown disk model $d (iops150 ebs ebs-opt bytes150 latency none)" ;;
	esac
done
[[ " $WORKLOADS " != *" pack "* ]] || [ -f "$PACK_DIR/linux.pack" ] || die "no $PACK_DIR/linux.pack"
[ $daemon = 0 ] || [ -x "$PBITMAPD" ] || die "no $PBITMAPD (make build/pbitmapd)"
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)

# Runs per boot, for the progress line and the time limit.  Measured on the
# 2-core host (2026-11-23): a gcc run 30-45 s, any other 3-4.5 s (nora's
# ten-fold reads included; iops150 the slowest disk), 6 min of set-up
# (stamping, ground truth, learning; gcc's learning runs on top) and 4.5 min
# for the warm-exec microbenchmark; the fill before a `pressure` or
# `pressure-off` run 2.5-7 s (t-pressure, 2026-11-25).  The guest's time
# limit is three times the estimate.
nwl=$(wc -w <<<"$WORKLOADS") ncond=$(wc -w <<<"$CONDITIONS")
gcc_in=0; [[ " $WORKLOADS " != *" gcc "* ]] || gcc_in=1
npress=0
for c in $CONDITIONS; do case $c in pressure | pressure-*) npress=$((npress + 1)) ;; esac; done
per_boot=$((ncond * (RUNS * (nwl - gcc_in) + GCC_RUNS * gcc_in)))
est_s=$((360 + 45 * LEARN_RUNS * gcc_in + ncond * (RUNS * (nwl - gcc_in) * 4 + GCC_RUNS * gcc_in * 40) +
	npress * (RUNS * (nwl - gcc_in) + GCC_RUNS * gcc_in) * 5 + daemon * 60 * (LEARN_RUNS + 1)))
ndisk=$(wc -w <<<"$DISK")
est_total=$((est_s * ndisk + (EXEC_BENCH ? 270 : 0)))
echo "bench: kernel $BENCH_KERNEL, $ndisk disk model(s) ($DISK) x $per_boot runs; about $((est_total / 60)) min estimated"

# blockstats DISK: the guest's and the host's read counts of the bench disk
# over the boot, on one line.  QEMU's rd_operations counts each request the
# guest issued (they should be equal: t-smoke checks it); rd_merged, those
# virtio-blk merged into a neighbour before the block layer, so the throttle
# charged rd_operations - rd_merged.  The guest's "merges" were merged in
# its own block layer before it issued them.
blockstats() {
	local g= h= g_ios g_merges g_bytes h_ops h_merged h_bytes
	read -r g_ios g_merges g_bytes <"$OUTDIR/$1/results/guest-blockstats" 2>/dev/null ||
		g="no guest count"
	if [ "$BENCH_KERNEL" = host ]; then
		h="none (no QEMU: BENCH_KERNEL=host)"
	elif ! { read -r h_ops h_merged h_bytes <"$OUTDIR/$1/host-blockstats"; } 2>/dev/null ||
		! [[ $h_ops =~ ^[0-9]+$ ]]; then
		h="no host count ($(head -c 200 "$OUTDIR/$1/host-blockstats" 2>/dev/null))"
	fi
	echo "bench: disk $1, reads over the boot:" \
		"guest ${g:-$g_ios requests ($g_merges merged before issue), $g_bytes bytes};" \
		"host (QMP) ${h:-$h_ops operations ($h_merged merged by QEMU), $h_bytes bytes}"
}

# host_job DISK JOB IMG: BENCH_KERNEL=host's boot: bench-job.sh run here,
# IMG on a loop device as its bench disk, throttled for DISK; everything it
# mounted and set undone after, whatever its status.  No QEMU, so no host
# count of the disk's reads: host-synced is there before the job asks.
host_job() {
	local disk=$1 job=$2 img=$3 dev devno rc=0
	dev=$(losetup -f --show --direct-io=on "$img") || die "losetup $img"
	dev=${dev#/dev/}
	devno=$(<"/sys/block/$dev/dev")
	echo "BENCH_DEV=$dev" >>"$job/bench.conf"
	if [ "$disk" = iops150 ]; then
		echo "$devno 150" >$BLKIO_V1/blkio.throttle.read_iops_device &&
			echo "$devno 150" >$BLKIO_V1/blkio.throttle.write_iops_device ||
			{ losetup -d "/dev/$dev"; die "cannot throttle /dev/$dev ($devno)"; }
	fi
	mkdir -p "$OUTDIR/$disk/results"
	: >"$OUTDIR/$disk/results/host-synced"
	# a loop device's counters live as long as the device node: the job's
	# count of the disk over its "boot" is made relative to its start
	local ios0 merges0 sectors0 ios merges bytes
	read -r ios0 merges0 sectors0 _ <"/sys/block/$dev/stat"
	(cd "$job" && RESULTS=$OUTDIR/$disk/results PATH=$job/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		bash ./bench-job.sh) >"$OUTDIR/$disk/vm.out" 2>&1 || rc=$?
	if read -r ios merges bytes <"$OUTDIR/$disk/results/guest-blockstats" 2>/dev/null; then
		echo "$((ios - ios0)) $((merges - merges0)) $((bytes - sectors0 * 512))" \
			>"$OUTDIR/$disk/results/guest-blockstats"
	fi
	umount -R /bench 2>/dev/null || umount -R -l /bench 2>/dev/null || true
	if [ "$disk" = iops150 ]; then
		echo "$devno 0" >$BLKIO_V1/blkio.throttle.read_iops_device || true
		echo "$devno 0" >$BLKIO_V1/blkio.throttle.write_iops_device || true
	fi
	losetup -d "/dev/$dev" || true
	return $rc
}

# guest_job DISK JOB: a guest boot running JOB's bench-job.sh, the bench disk
# attached as drive2 (set for DISK by the caller), with a progress line a
# minute and QEMU's count of the disk's reads taken when the job asks.
guest_job() {
	local disk=$1 job=$2 rc=0 progress_pid qmp qmp_pid
	(
		while sleep 60; do
			# The guest writes it in the job directory, shared over 9p.
			read -r k n s 2>/dev/null <"$OUTDIR/vm-job/results/progress" || continue
			((k > 0)) || { echo "bench: disk $disk: set-up done, $n runs to go"; continue; }
			echo "bench: disk $disk: run $k of $n, $((s / 60)) min $((s % 60)) s;" \
				"about $((s * (n - k) / k / 60)) min left in this boot;" \
				"$(((EPOCHSECONDS - t0) / 60)) min since the start"
		done
	) &
	progress_pid=$!
	# The host's count of the same disk: QEMU's blockstats, read when the
	# guest's job says it is done (bench-job.sh, host-sync).
	qmp=$OUTDIR/$disk/qmp.sock
	rm -f "$OUTDIR/vm-job/results/host-sync" "$OUTDIR/vm-job/results/host-synced"
	(
		while sleep 0.2; do
			[ -e "$OUTDIR/vm-job/results/host-sync" ] || continue
			"$HERE/qmp-blockstats.py" "$qmp" drive2 >"$OUTDIR/$disk/host-blockstats" 2>&1 || true
			: >"$OUTDIR/vm-job/results/host-synced"
			break
		done
	) &
	qmp_pid=$!
	env "${kernel_env[@]}" \
	IMAGE=$IMAGE IOPS=0 VM_DRIVE2=$drive2 VM_DRIVE2_DEVICE=$device2 VM_QMP=$qmp VM_TIMEOUT=$((est_s * 3 + 1800 + exec_bench * 900)) \
	VM_JOBDIR=$OUTDIR/vm-job VM_RESULTS=$OUTDIR/$disk/results VM_CONSOLE=$OUTDIR/$disk/console.log \
		"$TOP/kernel-patch/scripts/vm" --job "$job/bench-job.sh" "$job"/* >"$OUTDIR/$disk/vm.out" 2>&1 || rc=$?
	kill "$progress_pid" "$qmp_pid" 2>/dev/null || true
	return $rc
}

t0=$EPOCHSECONDS
first=1
: >"$OUTDIR/blockstats.txt"
: >"$OUTDIR/results.csv.new"
rm -f "$OUTDIR/waits.csv.new"
for disk in $DISK; do
	job=$OUTDIR/job-$disk
	rm -rf "${job:?}" "${OUTDIR:?}/$disk" && mkdir -p "$job" "$OUTDIR/$disk"
	cp "$HERE/bench-job.sh" "$job/"
	cp "$TOP/tests/lib/ground_truth.py" "$TOP/tests/lib/jaccard.py" \
		"$TOP/kernel-patch/tests/stamp-truth.py" "$TOP/kernel-patch/tests/fill-evict.c" "$HERE/meta-willneed.c" "$HERE/timed.c" \
		"${FLOOR_PY:-$HERE/floor.py}" "$TOP/build/pbitmap-run" "$TOP/build/pbitmap-audit.so" "$job/"
	[ -f "$SCHED_I" ] && cp "$SCHED_I" "$job/sched.i"
	[ $daemon = 0 ] || cp "$PBITMAPD" "$job/pbitmapd"
	if [ "$WAITS" = 1 ]; then
		cp "$WAITS_KO" "$job/stap_waits.ko"
		cp "${WAITS_KO%.ko}.kernel-build-id" "$job/stap_waits.kernel-build-id"
		cp "$TOP/stap/build-id.sh" "$job/"
		echo "$stap_version" >"$job/stap-version"
	fi
	if [[ " $WORKLOADS " == *" pack "* ]]; then
		cp "$PACK_DIR/linux.pack" "$PACK_DIR/linux.idx" "$PACKLOOKUP" "$job/"
	fi
	exec_bench=0; [ "$first" = 1 ] && exec_bench=$EXEC_BENCH
	cat >"$job/bench.conf" <<-EOF
	DISK=$disk RUNS=$RUNS GCC_RUNS=$GCC_RUNS LEARN_RUNS=$LEARN_RUNS
	WORKLOADS="$WORKLOADS"
	CONDITIONS="$CONDITIONS"
	EXEC_BENCH=$exec_bench EXEC_REPEATS=${EXEC_REPEATS:-3} WAITS=$WAITS
	DAEMON_FAULT_AROUND=${DAEMON_FAULT_AROUND:-}
	SSD_READ_AHEAD_KB=${SSD_READ_AHEAD_KB:-}
	RQ_TRACE=${RQ_TRACE:-0}
	RQ_STACK=${RQ_STACK:-0}
	EOF
	# A fresh copy of the guest image is the bench disk: the job stamps and
	# learns in it.  Not a QEMU snapshot: with one, rewritten blocks would be
	# read from the host's overlay, past the NBD server's delay.
	disk_img=$OUTDIR/disk.img
	cp --sparse=always "$IMAGE" "$disk_img"
	# Its own UUID: ext4's filesystem ID is made from it, and a fanotify
	# event of an open names the filesystem by that ID alone.  pbitmapd
	# watches opens on the first filesystem of an ID only (marks.c), which
	# would be the root disk, the image the bench disk is copied from.
	# The checksum seed keeps the checksums made with the old UUID valid.
	tune2fs -O metadata_csum_seed -U random "$disk_img" >/dev/null ||
		die "cannot give the bench disk its own UUID (tune2fs)"
	nbd_pid=
	device2=
	case $disk in
	iops150) drive2="file=$disk_img,format=raw,cache=unsafe,snapshot=off,throttling.iops-total=150" ;;
	ebs | ebs-opt) drive2="file=$disk_img,format=raw,cache=unsafe,snapshot=off,throttling.iops-total=150"
		drive2="$drive2,throttling.iops-size=262144,throttling.bps-total=6553600"
		# addr: a slot after the root disk's, so that it probes second
		# and is vdb (an explicit -device is placed before if=virtio ones).
		[ "$disk" = ebs ] || device2="opt_io_size=262144,addr=0x1f" ;;
	bytes150) drive2="file=$disk_img,format=raw,cache=unsafe,snapshot=off,throttling.iops-total=150"
		drive2="$drive2,throttling.iops-size=262144,throttling.bps-total=33554432" ;;
	none) drive2="file=$disk_img,format=raw,cache=unsafe,snapshot=off" ;;
	latency)
		command -v nbdkit >/dev/null || die "nbdkit missing (make deps)"
		sock=$OUTDIR/nbd.sock
		rm -f "$sock"
		nbdkit --foreground --unix "$sock" --filter=delay file "$disk_img" \
			rdelay="${DELAY_MS}ms" &
		nbd_pid=$!
		for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
		[ -S "$sock" ] || die "nbdkit did not start"
		drive2="file=nbd+unix:///?socket=$sock,format=raw,cache=unsafe,snapshot=off" ;;
	esac
	rc=0
	if [ "$BENCH_KERNEL" = host ]; then
		# pbitmap itself on PATH, as the guest image has it installed
		mkdir -p "$job/bin" && cp "$TOP/build/pbitmap" "$job/bin/"
		echo "bench: disk $disk: on this host's kernel, $(uname -r) (job $job)"
		host_job "$disk" "$job" "$disk_img" || rc=$?
		where=host log=$OUTDIR/$disk/vm.out
	else
		echo "bench: disk $disk: booting (job $job)"
		guest_job "$disk" "$job" || rc=$?
		where=guest log=$OUTDIR/$disk/results/output
	fi
	[ -z "$nbd_pid" ] || kill "$nbd_pid" 2>/dev/null || true
	# KEEP_DISK=1: the bench disk kept as OUTDIR/disk-DISK.img, for the
	# learned trees to be read on the host (pbitmap show) after the boot
	if [ "${KEEP_DISK:-0}" = 1 ]; then mv "$disk_img" "$OUTDIR/disk-$disk.img"; else rm -f "$disk_img"; fi
	tail -n 3 "$OUTDIR/$disk/vm.out"
	((rc == 0)) || die "disk $disk: the $where job failed (status $rc): $(cat "$OUTDIR/$disk/results/error" 2>/dev/null || tail -n 20 "$log" 2>/dev/null)"
	csv=$OUTDIR/$disk/results/bench.csv
	[ -f "$csv" ] || die "disk $disk: no bench.csv"
	blockstats "$disk" | tee -a "$OUTDIR/blockstats.txt"
	if [ "$first" = 1 ]; then cat "$csv"; else tail -n +2 "$csv"; fi >>"$OUTDIR/results.csv.new"
	if [ "$WAITS" = 1 ]; then
		wcsv=$OUTDIR/$disk/results/waits.csv
		[ -f "$wcsv" ] || die "disk $disk: WAITS=1 and no waits.csv"
		# (the test before the redirection: >> creates the file first)
		if [ -f "$OUTDIR/waits.csv.new" ]; then
			tail -n +2 "$wcsv" >>"$OUTDIR/waits.csv.new"
		else
			cp "$wcsv" "$OUTDIR/waits.csv.new"
		fi
	fi
	[ ! -f "$OUTDIR/$disk/results/exec.csv" ] || cp "$OUTDIR/$disk/results/exec.csv" "$OUTDIR/exec.csv"
	first=0
done
mv "$OUTDIR/results.csv.new" "$OUTDIR/results.csv"
[ ! -f "$OUTDIR/waits.csv.new" ] || mv "$OUTDIR/waits.csv.new" "$OUTDIR/waits.csv"
echo "bench: $(($(wc -l <"$OUTDIR/results.csv") - 1)) runs in $(((EPOCHSECONDS - t0) / 60)) min $(((EPOCHSECONDS - t0) % 60)) s"
# The report; on the unthrottled disk, `full` must not be slower than `off`
# beyond noise (report.py --not-slower: exit 3 when it is).
mkdir -p "$OUTDIR/plots"
report_args=()
[ ! -f "$OUTDIR/exec.csv" ] || report_args+=(--exec-csv "$OUTDIR/exec.csv")
[ "$WAITS" = 0 ] || report_args+=(--waits-csv "$OUTDIR/waits.csv")
if [[ " $DISK " == *" none "* && " $CONDITIONS " == *" full "* && " $CONDITIONS " == *" off "* ]]; then
	report_args+=(--not-slower full:none)
fi
rc=0
/usr/bin/python3 "$HERE/report.py" "$OUTDIR/results.csv" -o "$OUTDIR/BENCH-table.md" \
	--plots "$OUTDIR/plots" "${report_args[@]}" || rc=$?
echo "bench: tables in $OUTDIR/BENCH-table.md, plots in $OUTDIR/plots/"
exit $rc
