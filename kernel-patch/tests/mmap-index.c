// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mmap-index: touch a file through a read-only mapping the way an index
 * lookup does, for the guest tests of the kernel's prefetch at mmap
 * (kernel-patch/tests/t-mmap-data.sh, t-crafted-mmap.sh).
 *
 *   mmap-index clustered|scattered SEED FILE
 *
 * clustered: 300 reads in 30 clusters.  Each cluster starts at a random
 *   page and walks forward 10 reads, 1 to 24 pages apart, as a B-tree search
 *   reads a node and its neighbours: a cluster spans about 500 KiB.  The
 *   steps are at most 96 KiB, so a prefetch that joins gaps that wide (a
 *   disk's gap is 128 KiB to 1 MiB, within half a readahead window per run,
 *   with vm.pbitmap_merge_gap_kb at -1) reads a cluster in one request, while
 *   fault-driven read-around (128 KiB around each miss) needs several.
 *   (With steps of at most 8 pages, clusters of about 180 KiB, read-around
 *   needed 79 requests for 30 clusters and the prefetch 29: one request per
 *   cluster is the floor, so the ratio is set by the cluster's span.)
 * scattered: 300 distinct single pages spread uniformly over the file.
 *
 * The pattern is a pure function of SEED and the file size (xorshift64*),
 * so every run of a test touches the same pages.  Prints one line:
 * "MODE reads=N pages=P checksum=HEX", the checksum over the 64 bytes read
 * at each place, so the outputs of runs can be compared.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define READS		300
#define CLUSTERS	30
#define READ_BYTES	64
#define MAX_STEP	24	/* pages between reads of one cluster */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, n): n is far below 2^32, so the modulo bias is negligible. */
static uint64_t rng_below(uint64_t n)
{
	return rng_next() % n;
}

/* FNV-1a over the bytes read: the same bytes give the same checksum. */
static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The pages to read, in the order they are read. */
static int plan_clustered(uint64_t *pages, uint64_t nr_pages)
{
	uint64_t span = (uint64_t)(READS / CLUSTERS) * MAX_STEP;
	int n = 0;

	if (nr_pages <= span) {
		fprintf(stderr, "mmap-index: file too small for clusters (%" PRIu64 " pages)\n",
			nr_pages);
		return -1;
	}
	for (int c = 0; c < CLUSTERS; c++) {
		uint64_t page = rng_below(nr_pages - span);

		for (int i = 0; i < READS / CLUSTERS; i++) {
			pages[n++] = page;
			page += 1 + rng_below(MAX_STEP);
		}
	}
	return n;
}

static int plan_scattered(uint64_t *pages, uint64_t nr_pages)
{
	int n = 0;

	if (nr_pages < 4 * READS) {
		fprintf(stderr, "mmap-index: file too small to scatter %d pages\n", READS);
		return -1;
	}
	while (n < READS) {
		uint64_t page = rng_below(nr_pages);
		int dup = 0;

		for (int i = 0; i < n; i++)
			dup |= pages[i] == page;
		if (!dup)
			pages[n++] = page;
	}
	return n;
}

int main(int argc, char **argv)
{
	uint64_t pages[READS], sorted[READS], checksum = 0xcbf29ce484222325ULL;
	long page_size = sysconf(_SC_PAGESIZE);
	const char *mode, *path;
	unsigned char *map;
	struct stat st;
	int fd, n, distinct;
	char *end;

	if (argc != 4) {
		fprintf(stderr, "usage: mmap-index clustered|scattered SEED FILE\n");
		return 2;
	}
	mode = argv[1];
	path = argv[3];
	errno = 0;
	rng_state = strtoull(argv[2], &end, 10);
	if (errno || *end || end == argv[2]) {
		fprintf(stderr, "mmap-index: bad SEED '%s'\n", argv[2]);
		return 2;
	}
	/* xorshift must not start at zero; mix the seed so 0 and 1 differ too. */
	rng_state = (rng_state + 1) * 0x9e3779b97f4a7c15ULL;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "mmap-index: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (!strcmp(mode, "clustered"))
		n = plan_clustered(pages, (uint64_t)st.st_size / page_size);
	else if (!strcmp(mode, "scattered"))
		n = plan_scattered(pages, (uint64_t)st.st_size / page_size);
	else {
		fprintf(stderr, "mmap-index: unknown mode '%s'\n", mode);
		return 2;
	}
	if (n < 0)
		return 1;

	map = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "mmap-index: %s: mmap: %s\n", path, strerror(errno));
		return 1;
	}
	close(fd);
	for (int i = 0; i < n; i++) {
		/* A record somewhere in the page, as a lookup compares a key. */
		uint64_t at = pages[i] * page_size +
			      (pages[i] * 977 % (page_size / READ_BYTES)) * READ_BYTES;

		checksum = fnv1a(checksum, map + at, READ_BYTES);
	}
	munmap(map, st.st_size);

	memcpy(sorted, pages, n * sizeof(*pages));
	qsort(sorted, n, sizeof(*sorted), cmp_u64);
	distinct = n > 0;
	for (int i = 1; i < n; i++)
		distinct += sorted[i] != sorted[i - 1];
	printf("%s reads=%d pages=%d checksum=%016" PRIx64 "\n", mode, n, distinct, checksum);
	return 0;
}
