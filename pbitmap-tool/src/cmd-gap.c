// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap device-gap: measure what a read request costs on the device a
 * path is on, in bytes of transfer, and so the widest gap between two runs
 * of marked pages worth reading to save a request.
 *
 * Why: the kernel joins runs across gaps its device cost model prices
 * (pbitmap_device_gap(): 128 KiB solid-state, 256 KiB rotational, at most
 * the device's optimal I/O size), but a block device does not say what it
 * charges for bytes.  A cloud volume that limits both operations and
 * bandwidth (an AWS gp3 volume: 3000 operations and 125 MiB/s, so one
 * operation is worth 43 KiB of transfer) pays for every gap byte read; on
 * the benchmark's model of it, python3's start-up plan took 1.62 s with the
 * model's gap and 1.18 s with 32 KiB, the stock kernel 1.44 s
 * (docs/bench/2026-11-30-gap.md).  A disk that charges requests and not
 * bytes is the other way round: the model's gap is too narrow, and a plan
 * that joined more would read its batch in fewer requests.  So measure:
 * reads of 4 KiB and of 1 MiB at random places, DEPTH at once (a plan's
 * batch is submitted at once; the kernel's native AIO, no threads), direct
 * I/O so that no cache answers, in three rounds of each size taken
 * alternately (the medians); the time per request grows with its size as
 * t(s) = c + s * b, and the gap is c / b, at most WIDEST_KB and the
 * device's largest request.  --set writes it to vm.pbitmap_merge_gap_kb
 * when it is narrower than the kernel's model or at least twice as wide,
 * and -1 (the model) between: the model also bounds the pages its joins
 * add, which a fixed gap does not.  With -q only that value is printed.
 * --set also records that value and the device's MAJ:MIN in
 * /run/pbitmap/device-gap, on every kernel: pbitmapd, on a stock kernel,
 * takes it as its own join gap (daemon/config.c).  The device is the one
 * the path's filesystem reads from (blockdev.c: a btrfs's single device
 * too), as pbitmapd finds /usr's; a path on no single block device (a
 * btrfs on several, tmpfs, NFS) is an error, but --set only says so and
 * exits 0: there is nothing to measure, and the boot service must not fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "pbitmap.h"
#include "blockdev.h"
#include "cli.h"

#define GAP_SYSCTL	"/proc/sys/vm/pbitmap_merge_gap_kb"
#define SMALL		(4u << 10)
#define LARGE		(1024u << 10)
/*
 * The widest gap --set writes, wider than the kernel's model where a request
 * costs more than twice the model's gap: on the benchmark's 150-IOPS disk
 * (requests charged, bytes free) a fixed 1024 KiB gap took the git-pack
 * lookups from 1.125 s to 0.685 s and gdb from 1.80 s to 1.57 s, where 4096
 * KiB read the pack nearly whole and gave 0.960 s
 * (docs/bench/2026-11-30-wide-gap.md).
 */
#define WIDEST_KB	PB_DEVICE_GAP_WIDEST_KB
#define MIN_READS	16	/* per size, whatever the time */
#define MAX_READS	4096
#define MAX_DEPTH	64
#define MIN_SECONDS	0.5	/* per round and size */
#define ROUNDS		3	/* small, large, small, large ...: the medians */

/* The kernel's native AIO, by system call: no threads in a static tool. */
static long aio_setup(unsigned int nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx);
}

static long aio_submit(aio_context_t ctx, long nr, struct iocb **iocbs)
{
	return syscall(SYS_io_submit, ctx, nr, iocbs);
}

static long aio_wait(aio_context_t ctx, long min, long max, struct io_event *ev)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, NULL);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct sample {
	aio_context_t ctx;
	int fd;
	uint64_t cells;		/* LARGE-sized places on the device */
	uint64_t x;		/* xorshift64 state: the places */
	unsigned int size;
	struct iocb cb[MAX_DEPTH];
	char *buf;		/* a buffer of LARGE bytes per slot */
};

/* Start slot @i's next read, at a random place. */
static int start_read(struct sample *s, unsigned int i)
{
	struct iocb *cb = &s->cb[i];

	s->x ^= s->x << 13, s->x ^= s->x >> 7, s->x ^= s->x << 17;
	*cb = (struct iocb){ .aio_data = i, .aio_lio_opcode = IOCB_CMD_PREAD,
			     .aio_fildes = (uint32_t)s->fd,
			     .aio_buf = (uint64_t)(uintptr_t)(s->buf + (size_t)i * LARGE),
			     .aio_nbytes = s->size,
			     .aio_offset = (int64_t)((s->x % s->cells) * LARGE) };
	return aio_submit(s->ctx, 1, &cb) == 1 ? 0 : -1;
}

/*
 * @depth reads of @s->size in flight, each replaced by another as it
 * completes, until @min_reads have completed and @seconds have passed
 * (or MAX_READS); then the rest are waited for.  Returns the reads done,
 * or -1 with errno set.
 */
static long read_for(struct sample *s, unsigned int depth, unsigned int min_reads,
		     double seconds)
{
	struct io_event ev[MAX_DEPTH];
	unsigned int i, inflight = 0;
	long done = 0, n;
	double t0 = now();

	for (i = 0; i < depth; i++, inflight++)
		if (start_read(s, i))
			goto drain;
	while (inflight) {
		n = aio_wait(s->ctx, 1, inflight, ev);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto drain;
		for (long k = 0; k < n; k++) {
			inflight--;
			if (ev[k].res != (int64_t)s->size) {
				errno = ev[k].res < 0 ? (int)-ev[k].res : EIO;
				goto drain;
			}
			done++;
			if ((done < min_reads || now() - t0 < seconds) && done < MAX_READS) {
				if (start_read(s, (unsigned int)ev[k].data))
					goto drain;
				inflight++;
			}
		}
	}
	return done;
drain:
	n = errno;
	while (inflight && aio_wait(s->ctx, 1, inflight, ev) > 0)
		inflight--;
	errno = (int)n;
	return -1;
}

/*
 * Seconds per request of @size, @depth requests at a time: at least
 * MIN_READS requests and MIN_SECONDS, after one request each to wake the
 * device.  Returns a negative value on an error, reported.
 */
static double per_request(const char *dev, struct sample *s, unsigned int size,
			  unsigned int depth)
{
	double t0;
	long done;

	s->size = size;
	if (read_for(s, depth, 0, 0) < 0)	/* one request each, none replaced */
		goto fail;
	t0 = now();
	done = read_for(s, depth, MIN_READS, MIN_SECONDS);
	if (done > 0)
		return (now() - t0) / (double)done;
fail:
	pb_error_errno(dev, "cannot read %u bytes", size);
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The time per request of each size, as the median of ROUNDS rounds that
 * alternate the sizes: a device's or a throttle's burst allowance, or
 * another task's reads, then weigh on one round of each, not on one size.
 */
static int sample_sizes(const char *dev, int fd, uint64_t cells, unsigned int depth,
			double *small, double *large)
{
	struct sample smp = { .fd = fd, .cells = cells };
	double s[ROUNDS], l[ROUNDS];
	int ret = 0;

	smp.x = (uint64_t)now() * 0x9e3779b97f4a7c15ull | 1;
	if (posix_memalign((void **)&smp.buf, 4096, (size_t)depth * LARGE))
		return pb_error(dev, "out of memory");
	if (aio_setup(MAX_DEPTH, &smp.ctx)) {
		free(smp.buf);
		return pb_error_errno(dev, "cannot set up asynchronous reads");
	}
	for (int i = 0; i < ROUNDS && !ret; i++) {
		s[i] = per_request(dev, &smp, SMALL, depth);
		l[i] = s[i] < 0 ? -1 : per_request(dev, &smp, LARGE, depth);
		ret = l[i] < 0 ? PB_FAIL : 0;
	}
	syscall(SYS_io_destroy, smp.ctx);
	free(smp.buf);
	if (ret)
		return ret;
	qsort(s, ROUNDS, sizeof(s[0]), cmp_double);
	qsort(l, ROUNDS, sizeof(l[0]), cmp_double);
	*small = s[ROUNDS / 2], *large = l[ROUNDS / 2];
	return 0;
}

/* The kernel's own gap for the device, as pbitmap_device_gap() computes it. */
static unsigned long long model_gap_kb(unsigned int maj, unsigned int min)
{
	unsigned long long kb = pb_queue_value(maj, min, "rotational", 0) ? 256 : 128;
	unsigned long long opt = pb_queue_value(maj, min, "optimal_io_size", 0) >> 10;
	unsigned long long max = pb_queue_value(maj, min, "max_sectors_kb", kb);

	if (opt && opt < kb)
		kb = opt;
	return max < kb ? max : kb;
}

/*
 * Record @kb, measured on @maj:@min, for pbitmapd (PB_DEVICE_GAP_FILE, on
 * every kernel): a temporary file in the same directory, renamed over the
 * old one, so that a reader sees the old line or the new one, never half.
 */
static int record_gap(long long kb, unsigned int maj, unsigned int min)
{
	const char *dir = pb_run_dir();
	char path[PATH_MAX], line[64];
	int len, err;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, PB_DEVICE_GAP_FILE) >= sizeof(path))
		return pb_error(dir, "path too long");
	if (mkdir(dir, 0755) == 0)
		chmod(dir, 0755);	/* whatever the umask: pbitmapd reads it */
	else if (errno != EEXIST)
		return pb_error_errno(path, "cannot create the directory %s", dir);
	len = snprintf(line, sizeof(line), "%lld %u:%u\n", kb, maj, min);
	err = pb_write_small_file(path, line, (size_t)len, 0644, 0);
	if (err) {
		errno = -err;
		return pb_error_errno(path, "cannot write");
	}
	return 0;
}

/*
 * --set: the file pbitmapd reads, then the patched kernel's sysctl.  A
 * kernel without the sysctl is no error: pbitmapd alone uses the gap.
 */
static int set_gap(long long kb, unsigned int maj, unsigned int min)
{
	int ret = record_gap(kb, maj, min);
	FILE *fp = fopen(GAP_SYSCTL, "we");

	if (!fp && errno == ENOENT) {
		if (!ret)
			pb_note(GAP_SYSCTL, "no such setting: the kernel has no pbitmap patch; "
				"the gap is recorded for pbitmapd only");
		return ret;
	}
	if (!fp)
		return pb_error_errno(GAP_SYSCTL, "cannot write");
	fprintf(fp, "%lld\n", kb);
	if (fclose(fp))
		return pb_error_errno(GAP_SYSCTL, "cannot write %lld", kb);
	return ret;
}

/*
 * The value --set writes for a request worth @gap_kb of transfer: that gap
 * where it is narrower than the kernel's model @model_kb, or at least twice
 * as wide; -1 (the model) between, where the model is about right and also
 * bounds the pages its joins add, which a fixed gap does not.
 */
static long long gap_of(long long gap_kb, long long model_kb)
{
	return gap_kb < model_kb || gap_kb >= 2 * model_kb ? gap_kb : -1;
}

static int measure(const char *path, unsigned int depth, bool set)
{
	unsigned int maj, min;
	char dev[64], why[PB_BLOCKDEV_WHY];
	uint64_t bytes;
	double small, large, byte_s, req_s;
	long long gap_kb, model, widest, setting;
	dev_t devno;
	int fd, r;

	/*
	 * A block device is measured itself; any other path, the one its
	 * filesystem reads from (a btrfs's one device too): the device
	 * pbitmapd compares with /usr's, by the same function.
	 */
	r = pb_block_device(path, &devno, why, sizeof(why));
	if (r == PB_FAIL)
		return pb_error_errno(path, "%s", why);
	if (r == PB_NONE && !set)
		return pb_error(path, "on no single block device (%s)", why);
	if (r == PB_NONE) {
		/*
		 * Not an error with --set: the boot service would fail on
		 * every such /usr (btrfs RAID, a network or memory root),
		 * where nothing is wrong and there is just nothing to measure.
		 * A file recorded earlier is left alone: it names the device
		 * it was measured on, still true of that device, and pbitmapd
		 * uses it only when that is /usr's single device, which a /usr
		 * on none never matches; at boot /run is empty anyway.  The
		 * sysctl is left alone too: at boot it is the model (-1), and
		 * a value written since is someone's choice.
		 */
		pb_note(path, "on no single block device (%s): nothing measured, the join gap"
			" stays the kernel's model", why);
		return 0;
	}
	maj = major(devno), min = minor(devno);
	if (!pb_block_device_node(devno, dev, sizeof(dev)))
		return pb_error(path, "no block device %u:%u in /sys/dev/block", maj, min);
	fd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return pb_error_errno(dev, "cannot open");
	if (ioctl(fd, BLKGETSIZE64, &bytes) || bytes < 16 * (uint64_t)LARGE) {
		close(fd);
		return pb_error(dev, "too small to measure (or not a block device)");
	}
	if (sample_sizes(dev, fd, bytes / LARGE, depth, &small, &large)) {
		close(fd);
		return PB_FAIL;
	}
	close(fd);
	model = (long long)model_gap_kb(maj, min);
	widest = (long long)pb_queue_value(maj, min, "max_sectors_kb", WIDEST_KB);
	widest = widest < WIDEST_KB ? widest : WIDEST_KB;
	/*
	 * t(s) = c + s * b, from the two sizes: bytes free (b <= 0) makes any
	 * gap worth reading, up to the widest; requests free (c <= 0), none
	 * wider than the model.
	 */
	byte_s = (large - small) / (LARGE - SMALL);
	req_s = small - SMALL * (byte_s > 0 ? byte_s : 0);
	if (byte_s <= 0)
		gap_kb = widest;
	else if (req_s <= 0)
		gap_kb = model;
	else
		gap_kb = (long long)(req_s / byte_s) >> 10;
	gap_kb = (gap_kb < widest ? gap_kb : widest) & ~3LL;	/* whole pages */
	setting = gap_of(gap_kb, model);
	if (pb_quiet) {		/* -q: the value --set writes, alone */
		printf("%lld\n", setting);
		goto out;
	}
	printf("%s: %s (%u:%u), %u reads at once\n", path, dev, maj, min, depth);
	printf("  4 KiB reads:   %8.3f ms each\n", small * 1e3);
	printf("  1 MiB reads:   %8.3f ms each\n", large * 1e3);
	if (setting < 0)
		printf("  a request costs as much as %lld KiB of transfer: the kernel's model"
		       " (%lld KiB) stands\n", gap_kb, model);
	else if (gap_kb >= widest)
		printf("  a request costs as much as %lld KiB of transfer or more: join gap"
		       " %lld KiB (the kernel's model: %lld KiB)\n", gap_kb, setting, model);
	else
		printf("  a request costs as much as %lld KiB of transfer: join gap %lld KiB"
		       " (the kernel's model: %lld KiB)\n", gap_kb, setting, model);
out:
	if (pb_flush_stdout())
		return PB_FAIL;
	return set ? set_gap(setting, maj, min) : 0;
}

int pb_cmd_device_gap(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "set", no_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 'd' },
		{ 0 }
	};
	unsigned long long depth = 8;
	bool set = false;
	int c;

	while ((c = pb_getopt(argc, argv, "sd:", opts)) != -1) {
		if (c == 's')
			set = true;
		else if (c == 'd' && pb_parse_uint(optarg, MAX_DEPTH, &depth) && depth)
			;
		else if (c == 'd')
			return pb_usage_error("device-gap: --depth %s: a number from 1 to 64", optarg);
		else
			return pb_option_exit(c);
	}
	if (argc - optind > 1)
		return pb_usage_error("device-gap: one PATH at most");
	return measure(optind < argc ? argv[optind] : "/usr", (unsigned int)depth, set)
		? PB_EXIT_FAIL : PB_EXIT_OK;
}
