// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap: messages on stderr, in one format ("pbitmap: FILE: message"),
 * and the crash-injection points of the test build.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbitmap.h"
#include "cli.h"

const char *pb_progname = "pbitmap";
int pb_verbose;
int pb_quiet;

static void vmessage(const char *path, const char *fmt, va_list ap, int err)
{
	fprintf(stderr, "%s: ", pb_progname);
	if (path)
		fprintf(stderr, "%s: ", path);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
}

int pb_error(const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(path, fmt, ap, 0);
	va_end(ap);
	return PB_FAIL;
}

int pb_error_errno(const char *path, const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vmessage(path, fmt, ap, err);
	va_end(ap);
	return PB_FAIL;
}

int pb_skip(const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(path, fmt, ap, 0);
	va_end(ap);
	return PB_SKIPPED;
}

void pb_note(const char *path, const char *fmt, ...)
{
	va_list ap;

	if (pb_quiet)
		return;
	va_start(ap, fmt);
	vmessage(path, fmt, ap, 0);
	va_end(ap);
}

void pb_fault_point(const char *step)
{
#ifdef PBITMAP_FAULT_INJECTION
	const char *want = getenv("PBITMAP_FAULT");

	if (!want)
		return;
	if (!strcmp(want, "list"))
		fprintf(stderr, "fault point: %s\n", step);
	else if (!strcmp(want, step))
		raise(SIGKILL);
#else
	(void)step;
#endif
}

int pb_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", pb_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", pb_progname);
	return PB_EXIT_USAGE;
}

/* Explain why a file has no usable record; PB_FAIL. */
int pb_error_no_record(const struct pb_file *f)
{
	if (f->interrupted)
		return pb_error(f->path, "interrupted stamp (the original is intact): "
				"run 'pbitmap add' or 'pbitmap strip' to repair");
	if (f->damage)
		return pb_error(f->path, "invalid bitmap: %s", f->damage);
	return pb_error(f->path, "has no bitmap");
}

int pb_open_record(struct pb_file *f, const char *path, unsigned int flags)
{
	int ret = pb_open(f, path, flags);

	if (ret || f->has_record)
		return ret;
	ret = pb_error_no_record(f);
	pb_close(f);
	return ret;
}

int pb_flush_stdout(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		pb_error_errno("<stdout>", "write error");
		return PB_EXIT_FAIL;
	}
	return PB_EXIT_OK;
}
