// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fill-evict: a full machine for a cold start (t-pressure.sh, bench-job.sh).
 *
 *   fill-evict FILL [FILE...]
 *
 * 1. posix_fadvise(POSIX_FADV_DONTNEED) on every FILE: the program's files
 *    leave the page cache first, so that freeing them afterwards frees
 *    nothing;
 * 2. FILL is read whole with read(): a sparse file larger than memory
 *    fills the page cache with its (zero) pages without a disk read, and
 *    the kernel reclaims until free memory sits at the watermarks;
 * 3. DONTNEED on every FILE again (a page the fill did not push out), then
 *    each FILE's resident pages counted with mincore(): they must be 0.
 *
 * Nothing else is evicted: ld.so, libc and the harness stay as the fill
 * left them.  mincore() needs a mapping of each FILE: run this with
 * vm.pbitmap_enabled=0, or the mapping of a stamped FILE would prefetch it.
 *
 * Prints one line of numbers, for the caller to parse:
 *   fill_kib fill_ms resident_pages memtotal_kb memfree_kb cached_kb high_kb
 * high_kb is the sum of every zone's high watermark (boost included) from
 * /proc/zoneinfo, the memory the node's prefetch budget is measured above.
 * Exit status 0 when every FILE was evicted, 1 when a page stayed or on an
 * error, 2 on usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int evict(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0) {
		fprintf(stderr, "fill-evict: %s: %s\n", path, strerror(errno));
		return -1;
	}
	err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	if (err) {
		fprintf(stderr, "fill-evict: %s: fadvise: %s\n", path, strerror(err));
		return -1;
	}
	return 0;
}

/* Pages of @path in the page cache, or -1. */
static long resident(const char *path)
{
	long page = sysconf(_SC_PAGESIZE), n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char *vec;
	struct stat st;
	size_t pages, i;
	void *map;

	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "fill-evict: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!st.st_size) {
		close(fd);
		return 0;
	}
	map = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		fprintf(stderr, "fill-evict: %s: mmap: %s\n", path, strerror(errno));
		return -1;
	}
	pages = (st.st_size + page - 1) / page;
	vec = malloc(pages);
	if (!vec || mincore(map, st.st_size, vec)) {
		fprintf(stderr, "fill-evict: %s: mincore: %s\n", path, strerror(errno));
		free(vec);
		munmap(map, st.st_size);
		return -1;
	}
	for (i = 0; i < pages; i++)
		n += vec[i] & 1;
	free(vec);
	munmap(map, st.st_size);
	return n;
}

/* Read @path whole; its size in KiB, or -1. */
static long long fill(const char *path)
{
	static char buf[1 << 20];
	long long total = 0;
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "fill-evict: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	if (n < 0 || total != st.st_size) {
		fprintf(stderr, "fill-evict: %s: read %lld of %lld bytes: %s\n", path, total,
			(long long)st.st_size, n < 0 ? strerror(errno) : "short");
		close(fd);
		return -1;
	}
	close(fd);
	return total >> 10;
}

/* The value of the line of /proc/meminfo starting with @key, in KiB. */
static long meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	size_t len = strlen(key);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* The sum of the zones' high watermarks, in KiB, or -1. */
static long high_watermarks(void)
{
	FILE *f = fopen("/proc/zoneinfo", "re");
	long pages = 0, v, page = sysconf(_SC_PAGESIZE);
	char line[256];
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " high %ld", &v) == 1) {
			pages += v;
			found = 1;
		}
	fclose(f);
	return found ? pages * (page >> 10) : -1;
}

int main(int argc, char **argv)
{
	long long kib;
	struct timespec t0, t1;
	long left = 0, r;
	int i, bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: fill-evict FILL [FILE...]\n");
		return 2;
	}
	for (i = 2; i < argc; i++)
		bad |= evict(argv[i]) != 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kib = fill(argv[1]);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (kib < 0)
		return 1;
	for (i = 2; i < argc; i++) {
		bad |= evict(argv[i]) != 0;
		r = resident(argv[i]);
		if (r) {
			if (r > 0)
				fprintf(stderr, "fill-evict: %s: %ld pages still cached\n", argv[i], r);
			bad = 1;
		}
		left += r > 0 ? r : 0;
	}
	printf("%lld %lld %ld %ld %ld %ld %ld\n", kib,
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000,
	       left, meminfo("MemTotal"), meminfo("MemFree"), meminfo("Cached"),
	       high_watermarks());
	return bad;
}
