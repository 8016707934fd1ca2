// SPDX-License-Identifier: GPL-2.0-or-later
/* One file read four ways, for docs/bench/2026-11-30-wide-gap-daemon.md, section 6. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
/* rd MODE FILE: willneed | populate | read | sparse (a page a MiB, by faults) */
int main(int argc, char **argv)
{
	int fd = open(argv[2], O_RDONLY);
	struct stat st;
	fstat(fd, &st);
	size_t n = st.st_size;
	if (!strcmp(argv[1], "willneed")) {
		for (off_t o = 0; o < (off_t)n; o += 8 << 20)
			posix_fadvise(fd, o, 8 << 20, POSIX_FADV_WILLNEED);
	} else if (!strcmp(argv[1], "populate")) {
		void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
		if (madvise(p, n, MADV_POPULATE_READ)) perror("populate");
	} else if (!strcmp(argv[1], "read")) {
		static char buf[1 << 20];
		while (read(fd, buf, sizeof(buf)) > 0) ;
	} else {
		volatile unsigned char *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
		unsigned s = 0;
		for (size_t o = 0; o < n; o += 1 << 20) s += p[o];
		printf("%u\n", s);
	}
	return 0;
}
