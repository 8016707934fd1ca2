// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vma-learn: fault chosen pages of a file from several threads while
 * another thread keeps taking mmap_lock for writing, for t-learn-vma-lock.
 *
 *   vma-learn FILE
 *
 * Maps FILE (read-only, shared).  Two threads touch one byte of each page
 * they own: pages 0, 7, 14, ... of the first half, and 0, 5, 10, ... (from
 * the middle) of the second half.  A third thread, until they are done,
 * maps and unmaps 64 KiB of anonymous memory and changes its protection,
 * which takes mmap_lock for writing: faults on FILE's VMA proceed under
 * its per-VMA lock meanwhile, or wait and retry under mmap_lock.
 * Prints "pages=N sum=S" (S: the bytes read, so the reads stay).
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

static const volatile unsigned char *map;
static size_t npages;
static atomic_int done;
static atomic_ulong sum, touched;

struct range {
	size_t first, last, step;
};

static void *toucher(void *arg)
{
	const struct range *r = arg;
	unsigned long s = 0, n = 0;

	for (size_t i = r->first; i < r->last; i += r->step, n++)
		s += map[i * PAGE];
	atomic_fetch_add(&sum, s);
	atomic_fetch_add(&touched, n);
	atomic_fetch_add(&done, 1);
	return NULL;
}

static void *churner(void *arg)
{
	(void)arg;
	while (atomic_load(&done) < 2) {
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
	struct stat st;
	pthread_t t[3];
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
	if (npages < 2) {
		fprintf(stderr, "vma-learn: %s: smaller than two pages\n", argv[1]);
		return 1;
	}
	map = mmap(NULL, npages * PAGE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("vma-learn: mmap");
		return 1;
	}
	struct range a = { 0, npages / 2, 7 }, b = { npages / 2, npages, 5 };

	if (pthread_create(&t[2], NULL, churner, NULL) ||
	    pthread_create(&t[0], NULL, toucher, &a) ||
	    pthread_create(&t[1], NULL, toucher, &b)) {
		fprintf(stderr, "vma-learn: cannot start the threads\n");
		return 1;
	}
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("pages=%lu sum=%lu\n", atomic_load(&touched), atomic_load(&sum));
	return 0;
}
