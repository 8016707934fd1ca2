// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vma-learn: fault chosen pages of a file from several threads while
 * another thread keeps taking mmap_lock for writing, for t-learn-vma-lock.
 *
 *   vma-learn FILE
 *
 * Maps FILE (read-only, shared).  TOUCHERS (8) threads touch one byte of
 * each page they own: thread i the pages from i * n / 8 up to, not
 * including, (i + 2) * n / 8 (n pages in all; the last stops at n), every
 * (5 + i % 3)-th, so that neighbours overlap.  Another thread, until they
 * are done, maps and unmaps 64 KiB of anonymous memory and changes its
 * protection, which takes mmap_lock for writing: faults on FILE's VMA
 * proceed under its per-VMA lock meanwhile, or wait and retry under
 * mmap_lock.  Prints "pages=N sum=S": N distinct pages touched, S the
 * bytes read (so that the reads stay).  t-learn-vma-lock.sh computes the
 * same set.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096
#define TOUCHERS 8

static const volatile unsigned char *map;
static size_t npages;
static atomic_int done;
static atomic_ulong sum;
static atomic_uchar *seen;

struct range {
	size_t first, last, step;
};

static void *toucher(void *arg)
{
	const struct range *r = arg;
	unsigned long s = 0;

	for (size_t i = r->first; i < r->last; i += r->step) {
		s += map[i * PAGE];
		atomic_store(&seen[i], 1);
	}
	atomic_fetch_add(&sum, s);
	atomic_fetch_add(&done, 1);
	return NULL;
}

static void *churner(void *arg)
{
	(void)arg;
	while (atomic_load(&done) < TOUCHERS) {
		void *p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			perror("vma-learn: mmap");
			exit(1);
		}
		mprotect(p, 16 * PAGE, PROT_READ);
		munmap(p, 16 * PAGE);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct range r[TOUCHERS];
	pthread_t t[TOUCHERS + 1];
	unsigned long pages = 0;
	struct stat st;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: vma-learn FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		perror(argv[1]);
		return 1;
	}
	npages = st.st_size / PAGE;
	if (npages < 2 * TOUCHERS) {
		fprintf(stderr, "vma-learn: %s: smaller than %d pages\n", argv[1], 2 * TOUCHERS);
		return 1;
	}
	seen = calloc(npages, sizeof(*seen));
	if (!seen) {
		perror("vma-learn: calloc");
		return 1;
	}
	map = mmap(NULL, npages * PAGE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("vma-learn: mmap");
		return 1;
	}
	if (pthread_create(&t[TOUCHERS], NULL, churner, NULL)) {
		fprintf(stderr, "vma-learn: cannot start the threads\n");
		return 1;
	}
	for (int i = 0; i < TOUCHERS; i++) {
		size_t last = (size_t)(i + 2) * npages / TOUCHERS;

		r[i] = (struct range){ (size_t)i * npages / TOUCHERS,
				       last < npages ? last : npages, 5 + i % 3 };
		if (pthread_create(&t[i], NULL, toucher, &r[i])) {
			fprintf(stderr, "vma-learn: cannot start the threads\n");
			return 1;
		}
	}
	for (int i = 0; i <= TOUCHERS; i++)
		pthread_join(t[i], NULL);
	for (size_t i = 0; i < npages; i++)
		pages += atomic_load(&seen[i]);
	printf("pages=%lu sum=%lu\n", pages, atomic_load(&sum));
	return 0;
}
