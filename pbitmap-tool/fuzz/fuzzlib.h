/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the fuzz targets that run verbs share (fuzz_stamp.c, fuzz_import.c):
 * assertions, whole-file reads and writes, and running a verb as main()
 * does.  Each target defines fuzz_name, used in its messages.
 */
#ifndef PBITMAP_FUZZLIB_H
#define PBITMAP_FUZZLIB_H

#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pbitmap.h"

extern const char fuzz_name[];

/* abort() (libFuzzer keeps the input) unless @ok. */
static inline void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "%s: %s\n", fuzz_name, what);
		abort();
	}
}

/* The whole content of @path (malloc'ed, *size set), or NULL. */
static inline unsigned char *slurp(const char *path, size_t *size)
{
	FILE *fp = fopen(path, "rb");
	unsigned char *buf = NULL;
	long len;

	if (!fp)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (len = ftell(fp)) >= 0 &&
	    fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
	    fread(buf, 1, (size_t)len, fp) == (size_t)len) {
		*size = (size_t)len;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(fp);
	return buf;
}

static inline void write_file(const char *path, const void *data, size_t size)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	check(fd >= 0, "cannot create the input file");
	check(size == 0 || write(fd, data, size) == (ssize_t)size, "cannot write the input file");
	close(fd);
}

/* Run a verb as main() does: argv[0] is the verb, getopt starts afresh. */
static inline int verb(int (*run)(int, char **), ...)
{
	char *argv[16];
	int argc = 0;
	va_list ap;

	va_start(ap, run);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	optind = 0;
	pb_verbose = 0;
	pb_quiet = 0;
	return run(argc, argv);
}

#endif /* PBITMAP_FUZZLIB_H */
