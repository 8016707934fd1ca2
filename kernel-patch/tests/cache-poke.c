// SPDX-License-Identifier: GPL-2.0
/*
 * cache-poke: map files the way the record-cache tests need, and nothing
 * more (kernel-patch/tests/t-cache-*.sh).  No page of a mapped file is
 * touched: only the kernel's work at mmap() is exercised.
 *
 *   cache-poke map [-1] [-a T] [-f N] FILE...
 *                                       map each FILE read-only (its first
 *                                       page only with -1) and unmap it;
 *                                       with -a, not before T (seconds since
 *                                       the Epoch), so that several processes
 *                                       map at the same moment; with -f, the
 *                                       N-th fault-injection point reached
 *                                       from then on fails (fail-nth, written
 *                                       after exec, so that the lookups of
 *                                       this program's own libraries do not
 *                                       count)
 *   cache-poke wait-map [-1] FILE...    print "ready", wait for a line on
 *                                       stdin, then map as above, print "done"
 *   cache-poke loop SECONDS FILE        for SECONDS, or until SIGTERM: map
 *                                       FILE whole, unmap it, set its
 *                                       user.pbitmap attribute again to the
 *                                       value it has; prints the number of
 *                                       rounds
 *
 * Prints "pid N" first, so that a test can pick this process's events out
 * of the trace.  Exit status 1 with a message on the first failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const char *file)
{
	fprintf(stderr, "cache-poke: %s: %s: %s\n", file, what, strerror(errno));
	exit(1);
}

static void map_one(const char *file, int first_page)
{
	struct stat st;
	size_t len;
	void *p;
	int fd;

	fd = open(file, O_RDONLY);
	if (fd < 0)
		die("open", file);
	if (fstat(fd, &st) < 0)
		die("fstat", file);
	len = first_page ? 4096 : (size_t)st.st_size;
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap", file);
	munmap(p, len);
	close(fd);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int loop(double seconds, const char *file)
{
	static char value[65536];
	unsigned long rounds = 0;
	double end = now() + seconds;
	struct sigaction sa = { .sa_handler = on_term };
	ssize_t n;

	sigaction(SIGTERM, &sa, NULL);
	n = getxattr(file, "user.pbitmap", value, sizeof(value));
	if (n < 0)
		die("getxattr user.pbitmap", file);
	while (!stop && now() < end) {
		map_one(file, 0);
		if (setxattr(file, "user.pbitmap", value, n, XATTR_REPLACE) < 0)
			die("setxattr user.pbitmap", file);
		rounds++;
	}
	printf("rounds %lu\n", rounds);
	return 0;
}

int main(int argc, char **argv)
{
	int first_page = 0, wait = 0, i = 2;
	const char *nth = NULL;
	double at = 0;
	char line[16];

	if (argc < 3) {
		fprintf(stderr, "usage: cache-poke map|wait-map [-1] FILE... | loop SECONDS FILE\n");
		return 2;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(argv[1], "loop"))
		return argc == 4 ? loop(atof(argv[2]), argv[3]) : 2;
	if (!strcmp(argv[1], "wait-map"))
		wait = 1;
	else if (strcmp(argv[1], "map"))
		return 2;
	for (; i < argc - 1; i++) {
		if (!strcmp(argv[i], "-1"))
			first_page = 1;
		else if (!strcmp(argv[i], "-a"))
			at = atof(argv[++i]);
		else if (!strcmp(argv[i], "-f"))
			nth = argv[++i];
		else
			break;
	}
	if (wait) {
		/* The code of the mapping path is faulted in before "ready". */
		map_one("/proc/self/exe", 1);
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	if (at) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		if (at > ts.tv_sec + ts.tv_nsec / 1e9)
			usleep((useconds_t)((at - ts.tv_sec - ts.tv_nsec / 1e9) * 1e6));
	}
	if (nth) {
		FILE *f = fopen("/proc/thread-self/fail-nth", "w");

		if (!f || fputs(nth, f) == EOF || fclose(f) == EOF) {
			fprintf(stderr, "cache-poke: /proc/thread-self/fail-nth: %s\n", strerror(errno));
			return 1;
		}
	}
	for (; i < argc; i++)
		map_one(argv[i], first_page);
	if (wait)
		printf("done\n");
	return 0;
}
