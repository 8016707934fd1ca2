// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * learn-pages: touch chosen pages of this program's own file, for the
 * learning tests (t-learn, t-learn-storm, t-learn-rules).
 *
 *   learn-pages MODE [SLEEP_MS]
 *
 * The program carries a 4 MiB array in .rodata, file-backed.  MODE:
 *   A  touch array pages 0-63
 *   B  touch array pages 128-191
 *   W  touch A, sleep SLEEP_MS, touch B (the start-up window test)
 *   a  touch A, then sleep SLEEP_MS (two learners' windows, t-learn-rules)
 *   b  sleep SLEEP_MS, then touch B
 *   0  touch nothing of the array
 * Prints "first=N sum=S": N is the file page index of the array's first
 * page (from /proc/self/maps), S a sum of the bytes read, so that the
 * reads cannot be optimised away.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE 4096
#define BLOB_PAGES 1024

/* Every page holds its own index, so the file is not sparse. */
#define P4(n) [(n) * PAGE] = (n) & 0xff, [((n) + 1) * PAGE] = ((n) + 1) & 0xff, \
	[((n) + 2) * PAGE] = ((n) + 2) & 0xff, [((n) + 3) * PAGE] = ((n) + 3) & 0xff
#define P16(n) P4(n), P4((n) + 4), P4((n) + 8), P4((n) + 12)
#define P64(n) P16(n), P16((n) + 16), P16((n) + 32), P16((n) + 48)
#define P256(n) P64(n), P64((n) + 64), P64((n) + 128), P64((n) + 192)
static const unsigned char blob[BLOB_PAGES * PAGE] __attribute__((aligned(PAGE))) = {
	P256(0), P256(256), P256(512), P256(768)
};

static unsigned long touch(unsigned int first, unsigned int nr)
{
	const volatile unsigned char *p = blob;
	unsigned long sum = 0;
	unsigned int i;

	for (i = first; i < first + nr; i++)
		sum += p[(size_t)i * PAGE + 1] + p[(size_t)i * PAGE];
	return sum;
}

/* File page index of blob's first page, from /proc/self/maps. */
static long blob_file_page(void)
{
	uintptr_t addr = (uintptr_t)blob, start, end;
	unsigned long long off;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %*s %llx", &start, &end, &off) == 3 &&
		    addr >= start && addr < end) {
			fclose(f);
			return (long)((off + (addr - start)) / PAGE);
		}
	}
	fclose(f);
	return -1;
}

static void nap(const char *ms_arg)
{
	long ms = strtol(ms_arg, NULL, 10);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	unsigned long sum = 0;
	long first;

	if (argc < 2 || strlen(argv[1]) != 1) {
		fprintf(stderr, "usage: learn-pages A|B|W|a|b|0 [SLEEP_MS]\n");
		return 2;
	}
	switch (argv[1][0]) {
	case 'A':
		sum = touch(0, 64);
		break;
	case 'B':
		sum = touch(128, 64);
		break;
	case 'W':
		sum = touch(0, 64);
		nap(argc > 2 ? argv[2] : "2000");
		sum += touch(128, 64);
		break;
	case 'a':
		sum = touch(0, 64);
		nap(argc > 2 ? argv[2] : "2000");
		break;
	case 'b':
		nap(argc > 2 ? argv[2] : "2000");
		sum = touch(128, 64);
		break;
	case '0':
		break;
	default:
		fprintf(stderr, "learn-pages: unknown mode %s\n", argv[1]);
		return 2;
	}
	first = blob_file_page();
	if (first < 0) {
		fprintf(stderr, "learn-pages: array not found in /proc/self/maps\n");
		return 1;
	}
	printf("first=%ld sum=%lu\n", first, sum);
	return 0;
}
