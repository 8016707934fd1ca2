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
 * (docs/bench/2026-11-30-gap.md).  So measure: reads of 4 KiB and of 256
 * KiB at random places, DEPTH at once (a plan's batch is submitted at
 * once), direct I/O so that no cache answers, in three rounds of each size
 * taken alternately (the medians); the time per request grows
 * with its size as t(s) = c + s * b, and the gap is c / b.  --set writes it
 * to vm.pbitmap_merge_gap_kb when it is narrower than the kernel's model,
 * and -1 (the model) otherwise: the model also bounds the pages its joins
 * add, which a fixed gap does not.  With -q only that value is printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "pbitmap.h"
#include "cli.h"

#define GAP_SYSCTL	"/proc/sys/vm/pbitmap_merge_gap_kb"
#define SMALL		(4u << 10)
#define LARGE		(256u << 10)
#define MIN_READS	16	/* per size, whatever the time */
#define MAX_READS	4096
#define MIN_SECONDS	0.5	/* per round and size */
#define ROUNDS		3	/* small, large, small, large ...: the medians */

struct sample {
	int fd;
	uint64_t cells;		/* LARGE-sized places on the device */
	unsigned int size;
	atomic_uint next;	/* reads started */
	atomic_bool stop;
	atomic_int error;	/* errno of a failed read */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One of DEPTH readers: random cells, until told to stop or MAX_READS. */
static void *reader(void *arg)
{
	struct sample *s = arg;
	uint64_t x = (uint64_t)(uintptr_t)&x ^ (uint64_t)now() * 0x9e3779b97f4a7c15ull;
	void *buf;

	if (posix_memalign(&buf, LARGE, LARGE)) {
		atomic_store(&s->error, ENOMEM);
		return NULL;
	}
	while (!atomic_load(&s->stop) && atomic_fetch_add(&s->next, 1) < MAX_READS) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;	/* xorshift64 */
		if (pread(s->fd, buf, s->size, (off_t)((x % s->cells) * LARGE)) != s->size) {
			atomic_store(&s->error, errno ? errno : EIO);
			break;
		}
	}
	free(buf);
	return NULL;
}

/*
 * Seconds per request of @size, @depth requests at a time: at least
 * MIN_READS requests and MIN_SECONDS, after one request each to wake the
 * device.  Returns a negative value on an error, reported.
 */
static double per_request(const char *dev, int fd, uint64_t cells, unsigned int size,
			  unsigned int depth)
{
	struct sample s = { .fd = fd, .cells = cells, .size = size };
	pthread_t tid[64];
	unsigned int i, started = 0, done;
	double t0;

	for (int pass = 0; pass < 2; pass++) {
		atomic_store(&s.next, pass ? 0 : MAX_READS - depth);
		atomic_store(&s.stop, false);
		t0 = now();
		for (i = started = 0; i < depth; i++, started++)
			if (pthread_create(&tid[i], NULL, reader, &s))
				break;
		if (pass) {
			while (now() - t0 < MIN_SECONDS || atomic_load(&s.next) < MIN_READS) {
				if (atomic_load(&s.next) >= MAX_READS || atomic_load(&s.error))
					break;
				usleep(10000);
			}
			atomic_store(&s.stop, true);
		}
		for (i = 0; i < started; i++)
			pthread_join(tid[i], NULL);
		if (started < depth) {
			pb_error(dev, "cannot start %u readers", depth);
			return -1;
		}
		if (atomic_load(&s.error)) {
			errno = atomic_load(&s.error);
			pb_error_errno(dev, "cannot read %u bytes", size);
			return -1;
		}
	}
	/* A reader counts a read it will not make only past MAX_READS. */
	done = atomic_load(&s.next);
	done = done > MAX_READS ? MAX_READS : done;
	return (now() - t0) / done;
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
	double s[ROUNDS], l[ROUNDS];

	for (int i = 0; i < ROUNDS; i++) {
		s[i] = per_request(dev, fd, cells, SMALL, depth);
		l[i] = s[i] < 0 ? -1 : per_request(dev, fd, cells, LARGE, depth);
		if (l[i] < 0)
			return PB_FAIL;
	}
	qsort(s, ROUNDS, sizeof(s[0]), cmp_double);
	qsort(l, ROUNDS, sizeof(l[0]), cmp_double);
	*small = s[ROUNDS / 2], *large = l[ROUNDS / 2];
	return 0;
}

/* A number from the device's sysfs queue directory, or @dflt. */
static unsigned long long queue_value(unsigned int maj, unsigned int min, const char *name,
				      unsigned long long dflt)
{
	char path[128];
	unsigned long long v;
	FILE *fp;

	/* A partition's queue is its disk's: ../queue from the partition. */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s", maj, min, name);
	fp = fopen(path, "re");
	if (!fp) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s", maj, min, name);
		fp = fopen(path, "re");
	}
	if (!fp)
		return dflt;
	if (fscanf(fp, "%llu", &v) != 1)
		v = dflt;
	fclose(fp);
	return v;
}

/* The kernel's own gap for the device, as pbitmap_device_gap() computes it. */
static unsigned long long model_gap_kb(unsigned int maj, unsigned int min)
{
	unsigned long long kb = queue_value(maj, min, "rotational", 0) ? 256 : 128;
	unsigned long long opt = queue_value(maj, min, "optimal_io_size", 0) >> 10;
	unsigned long long max = queue_value(maj, min, "max_sectors_kb", kb);

	if (opt && opt < kb)
		kb = opt;
	return max < kb ? max : kb;
}

/*
 * The device node of @maj:@min in @dev: /dev/DEVNAME from sysfs (a system
 * without udev's /dev/block links has it), else /dev/block/MAJ:MIN.
 * Returns false when sysfs knows no such block device.
 */
static bool device_node(unsigned int maj, unsigned int min, char *dev, size_t size)
{
	char path[64], line[128];
	bool found = false;
	FILE *fp;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", maj, min);
	fp = fopen(path, "re");
	if (!fp)
		return false;
	snprintf(dev, size, "/dev/block/%u:%u", maj, min);
	while (!found && fgets(line, sizeof(line), fp))
		if (!strncmp(line, "DEVNAME=", 8) && !strchr(line + 8, '/')) {
			line[strcspn(line, "\n")] = 0;
			found = (size_t)snprintf(dev, size, "/dev/%s", line + 8) < size;
		}
	fclose(fp);
	return true;
}

static int set_gap(long long kb)
{
	FILE *fp = fopen(GAP_SYSCTL, "we");

	if (!fp)
		return errno == ENOENT
			? pb_error(GAP_SYSCTL, "no such setting: the kernel has no pbitmap patch")
			: pb_error_errno(GAP_SYSCTL, "cannot write");
	fprintf(fp, "%lld\n", kb);
	if (fclose(fp))
		return pb_error_errno(GAP_SYSCTL, "cannot write %lld", kb);
	return 0;
}

static int measure(const char *path, unsigned int depth, bool set)
{
	unsigned int maj, min;
	char dev[64];
	uint64_t bytes;
	double small, large, byte_s, req_s;
	long long gap_kb, model;
	struct stat st;
	int fd;

	if (stat(path, &st))
		return pb_error_errno(path, "cannot stat");
	/* A block device is measured itself; any other path, the one it is on. */
	if (S_ISBLK(st.st_mode))
		st.st_dev = st.st_rdev;
	maj = major(st.st_dev), min = minor(st.st_dev);
	if (!device_node(maj, min, dev, sizeof(dev)))
		return pb_error(path, "not on a block device of its own (device %u:%u)", maj, min);
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
	/* t(s) = c + s * b, from the two sizes; bytes free when b <= 0. */
	byte_s = (large - small) / (LARGE - SMALL);
	req_s = small - SMALL * (byte_s > 0 ? byte_s : 0);
	gap_kb = byte_s > 0 && req_s > 0 ? (long long)(req_s / byte_s) >> 10 : model;
	gap_kb &= ~3LL;			/* whole pages */
	if (pb_quiet) {		/* -q: the value --set writes, alone */
		printf("%lld\n", gap_kb < model ? gap_kb : -1);
		goto out;
	}
	printf("%s: %s (%u:%u), %u reads at once\n", path, dev, maj, min, depth);
	printf("  4 KiB reads:   %8.3f ms each\n", small * 1e3);
	printf("  256 KiB reads: %8.3f ms each\n", large * 1e3);
	if (gap_kb < model)
		printf("  a request costs as much as %lld KiB of transfer: join gap %lld KiB"
		       " (the kernel's model: %lld KiB)\n", gap_kb, gap_kb, model);
	else
		printf("  a request costs more than %lld KiB of transfer: the kernel's model"
		       " (%lld KiB) stands\n", model, model);
out:
	if (pb_flush_stdout())
		return PB_FAIL;
	return set ? set_gap(gap_kb < model ? gap_kb : -1) : 0;
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
		else if (c == 'd' && pb_parse_uint(optarg, 64, &depth) && depth)
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
