// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap: add, show, update, verify and remove predictive page bitmaps.
 * See pbitmap(1).
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "pbitmap.h"

#ifndef PBITMAP_VERSION_STRING
#define PBITMAP_VERSION_STRING "unknown"
#endif

const char *pb_progname = "pbitmap";
int pb_verbose;
int pb_quiet;

/* ---- messages ------------------------------------------------------------ */

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

/* ---- usage ---------------------------------------------------------------- */

static const char usage_text[] =
	"usage: pbitmap VERB [OPTION...] FILE...\n"
	"\n"
	"Predictive page bitmaps: remember which pages of a program, library or\n"
	"mapped data file are needed at start-up, and fetch them in one batch.\n"
	"\n"
	"  add [-g N] [-t T] [--page-shift S] [--no-learn|--learn] [--xattr-max B]\n"
	"      [-L] [--stdin [--summary]] FILE...\n"
	"                                 add an empty bitmap (idempotent)\n"
	"  strip [--stdin] FILE...        remove it; ELF files become byte-identical\n"
	"  undo [-o OUT] FILE             write the original bytes to stdout or OUT\n"
	"  digest [--algo A] FILE...      digest of the original bytes (default sha256)\n"
	"  show [--json] FILE...          print the bitmap\n"
	"  verify FILE...                 check checksum and bounds\n"
	"  set (--pages L|--ranges L) [--plane AGE] FILE...\n"
	"  clear (--pages L|--ranges L|--all) [--plane AGE] FILE...\n"
	"  merge DEST SRC...              OR the generations of SRC into DEST\n"
	"  record [--window SEC] -- CMD [ARG...]\n"
	"                                 learn the pages CMD uses (by ptrace)\n"
	"  prefetch [-v] FILE...          start reading the marked pages\n"
	"  run [-v] -- CMD [ARG...]       prefetch CMD and its libraries, then exec it\n"	"  stamp [--root DIR] [--dbpath DIR] (--rpm PKG...|--rpm-all)\n"
	"                                 add bitmaps to what rpm packages installed\n"
	"  rpm-verify [--root DIR] [--dbpath DIR] (PKG...|-a)\n"
	"                                 rpm -V, with stamped files checked as packaged\n"
	"\n"
	"Common options: -q quiet, -v verbose, -h help, --version.\n"
	"Exit status: 0 done, 1 error (files left untouched), 2 usage,\n"
	"3 some files skipped (busy, signed, immutable, read-only).\n"
	"See pbitmap(1).\n";

int pb_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", pb_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'pbitmap --help'.\n");
	return PB_EXIT_USAGE;
}

/* ---- shared helpers -------------------------------------------------------- */

/* Combine per-file results into the exit code. */
struct tally {
	int failed;
	int skipped;
};

static void tally_add(struct tally *t, int ret)
{
	if (ret == PB_FAIL)
		t->failed++;
	else if (ret == PB_SKIPPED)
		t->skipped++;
}

static int tally_exit(const struct tally *t)
{
	if (t->failed)
		return PB_EXIT_FAIL;
	return t->skipped ? PB_EXIT_SKIPPED : PB_EXIT_OK;
}

static bool parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return !errno && !*end && *out <= max;
}

/* A byte count with an optional K, M, G or T suffix (powers of 1024). */
static bool parse_size(const char *s, const char **rest, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return false;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return false;
	*out = (uint64_t)v << shift;
	*rest = end;
	return true;
}

static const struct option no_long_options[] = { { 0 } };

/* ---- add, strip ------------------------------------------------------------ */

/*
 * Identities (device, inode) already handled in --stdin mode.  A hash set
 * with open addressing: a file trigger may list every file of a system.
 */
struct file_id {
	dev_t dev;
	ino_t ino;		/* 0: free slot */
};

struct file_set {
	struct file_id *slot;
	size_t n, cap;		/* cap: 0 or a power of two */
};

static bool file_set_add(struct file_set *s, dev_t dev, ino_t ino);

static int file_set_grow(struct file_set *s)
{
	size_t old_cap = s->cap, cap = old_cap ? old_cap * 2 : 1024;
	struct file_id *old = s->slot, *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -1;
	s->slot = slot;
	s->cap = cap;
	s->n = 0;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].ino)
			file_set_add(s, old[i].dev, old[i].ino);
	free(old);
	return 0;
}

/* False if (dev, ino) was there already. */
static bool file_set_add(struct file_set *s, dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)dev;
	size_t i;

	if (!ino || (2 * (s->n + 1) > s->cap && file_set_grow(s)))
		return true;	/* rather handle a file twice than lose it */
	for (i = (size_t)(h ^ (h >> 31)) & (s->cap - 1); s->slot[i].ino;
	     i = (i + 1) & (s->cap - 1))
		if (s->slot[i].dev == dev && s->slot[i].ino == ino)
			return false;
	s->slot[i] = (struct file_id){ dev, ino };
	s->n++;
	return true;
}

static bool file_set_insert(struct file_set *s, const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return true;	/* let pb_open() report it */
	return file_set_add(s, st.st_dev, st.st_ino);
}

typedef int (*file_op)(const char *path, unsigned int flags, void *arg);

/* Where the paths of a list come from, and which of them are taken. */
struct line_source {
	FILE *in;
	const char *root;		/* prepended to every path, or NULL */
	char *const *prefixes;		/* NULL: every path */
};

/* SIGTERM (as from timeout(1)), SIGINT, SIGHUP: stop after the current file. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };	/* no SA_RESTART */

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static bool has_prefix(const char *path, char *const *prefixes)
{
	if (!prefixes)
		return true;
	for (; *prefixes; prefixes++)
		if (!strncmp(path, *prefixes, strlen(*prefixes)))
			return true;
	return false;
}

/* @path below @root, in a buffer kept in *@buf; NULL when out of memory. */
static const char *under_root(const char *root, const char *path, char **buf, size_t *cap)
{
	size_t need = strlen(root) + strlen(path) + 1;

	if (need > *cap) {
		char *p = realloc(*buf, need);

		if (!p)
			return NULL;
		*buf = p;
		*cap = need;
	}
	snprintf(*buf, *cap, "%s%s", root, path);
	return *buf;
}

/*
 * Run @op on each line of @src that names a new file.  The running pbitmap
 * executable is passed over: it cannot be written while it runs.
 */
static int for_each_line(const struct line_source *src, unsigned int flags,
			 file_op op, void *arg)
{
	struct tally t = { 0 };
	struct file_set seen = { 0 };
	struct stat self;
	char *line = NULL, *full = NULL;
	size_t cap = 0, full_cap = 0;
	ssize_t len;

	catch_stop_signals();
	/* AT_EXECFN too: a chroot, as rpm's scriptlets run in, may lack /proc. */
	if (!stat("/proc/self/exe", &self))
		file_set_add(&seen, self.st_dev, self.st_ino);
	if (getauxval(AT_EXECFN) && !stat((const char *)getauxval(AT_EXECFN), &self))
		file_set_add(&seen, self.st_dev, self.st_ino);
	while (!stop_signal && (len = getline(&line, &cap, src->in)) > 0) {
		const char *path = line;

		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (len && src->prefixes && *line != '/') {	/* from rpm: "package X is not installed" */
			tally_add(&t, pb_error(NULL, "rpm: %s", line));
			continue;
		}
		if (!len || !has_prefix(line, src->prefixes))
			continue;
		if (src->root && !(path = under_root(src->root, line, &full, &full_cap))) {
			tally_add(&t, pb_error_errno(line, "malloc"));
			break;
		}
		if (!file_set_insert(&seen, path))
			continue;
		tally_add(&t, op(path, flags | PB_OPEN_QUIET | PB_OPEN_ELF_ONLY, arg));
	}
	if (stop_signal)
		tally_add(&t, pb_error(NULL, "stopped by signal %d (%s): the rest of the list "
				       "was not handled", (int)stop_signal, strsignal(stop_signal)));
	else if (ferror(src->in))
		tally_add(&t, pb_error_errno(NULL, "reading the list of files"));
	free(line);
	free(full);
	free(seen.slot);
	return tally_exit(&t);
}

/* Run @op on each FILE argument, or on each line of stdin with --stdin. */
static int for_each_file(int argc, char **argv, bool from_stdin, unsigned int flags,
			 file_op op, void *arg)
{
	struct line_source src = { .in = stdin };
	struct tally t = { 0 };

	if (!from_stdin) {
		if (optind >= argc)
			return pb_usage_error("%s: no FILE given", argv[0]);
		for (int i = optind; i < argc; i++)
			tally_add(&t, op(argv[i], flags, arg));
		return tally_exit(&t);
	}
	if (optind < argc)
		return pb_usage_error("%s: --stdin takes no FILE arguments", argv[0]);
	return for_each_line(&src, flags, op, arg);
}

/* What add did, for --summary. */
struct add_args {
	struct pb_params p;
	unsigned long stamped, already, skipped, errors, passed;
};

/* Nothing asked to change: add leaves a file that has a bitmap as it is. */
static bool keeps_existing(const struct pb_params *p)
{
	return !p->nr_planes && !p->threshold && !p->page_shift && !p->set_flags;
}

static int count_add(struct add_args *a, int ret, bool stamped)
{
	switch (ret) {
	case 0:
		if (stamped)
			a->stamped++;
		else
			a->already++;
		return 0;
	case PB_NONE:
		a->passed++;
		return 0;
	case PB_SKIPPED:
		a->skipped++;
		return ret;
	default:
		a->errors++;
		return ret;
	}
}

static int stamp_one(const char *path, unsigned int flags, struct add_args *a)
{
	struct pb_file f;
	bool had_record;
	int ret = pb_open(&f, path, flags | PB_OPEN_WRITE);

	if (ret)
		return count_add(a, ret, false);
	had_record = f.has_record;
	ret = pb_stamp(&f, &a->p);
	if (!ret && pb_verbose)
		pb_note(path, "stamped: %" PRIu64 " pages, %u generations",
			pb_nr_pages(&f.rec), pb_hdr(&f.rec)->nr_planes);
	pb_close(&f);
	return count_add(a, ret, !had_record);
}

/*
 * A read-only look first: a file that keeps its bitmap needs no write
 * access, so a stamped program stays "already stamped" while it runs.
 */
static int add_one(const char *path, unsigned int flags, void *arg)
{
	struct add_args *a = arg;
	struct pb_file f;
	int ret = pb_open(&f, path, flags);

	if (ret)
		return count_add(a, ret, false);
	if (f.has_record && keeps_existing(&a->p)) {
		if (pb_verbose)
			pb_note(path, "already stamped");
		pb_close(&f);
		return count_add(a, 0, false);
	}
	pb_close(&f);
	return stamp_one(path, flags, a);
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

static void print_summary(const struct add_args *a, const struct timespec *start)
{
	fprintf(stderr, "%s: %lu files stamped, %lu already stamped, %lu skipped, "
		"%lu errors, %lu other paths passed over, in %.2f s\n", pb_progname,
		a->stamped, a->already, a->skipped, a->errors, a->passed, seconds_since(start));
}

int pb_stamp_lines(FILE *in, const char *root, char *const *prefixes)
{
	struct line_source src = { in, root, prefixes };
	struct add_args a = { 0 };
	struct timespec start;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	ret = for_each_line(&src, 0, add_one, &a);
	print_summary(&a, &start);
	return ret;
}

static int strip_one(const char *path, unsigned int flags, void *arg)
{
	struct pb_file f;
	int ret = pb_open(&f, path, flags | PB_OPEN_WRITE);

	(void)arg;
	if (ret)
		return ret == PB_NONE ? 0 : ret;
	ret = pb_unstamp(&f);
	if (ret == PB_NONE) {
		if (pb_verbose)
			pb_note(path, "has no bitmap");
		ret = 0;
	}
	pb_close(&f);
	return ret;
}

static int cmd_add(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "generations", required_argument, NULL, 'g' },
		{ "threshold", required_argument, NULL, 't' },
		{ "page-shift", required_argument, NULL, 'S' },
		{ "no-learn", no_argument, NULL, 'N' },
		{ "learn", no_argument, NULL, 'E' },
		{ "xattr-max", required_argument, NULL, 'X' },
		{ "dereference", no_argument, NULL, 'L' },
		{ "stdin", no_argument, NULL, 'I' },
		{ "summary", no_argument, NULL, 'U' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ 0 }
	};
	struct add_args a = { 0 };
	struct timespec start;
	bool summary = false;
	unsigned int flags = 0;
	bool from_stdin = false;
	unsigned long long v;
	uint64_t size;
	const char *rest;
	int c, ret;

	while ((c = getopt_long(argc, argv, "g:t:Lqv", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (!parse_uint(optarg, PBITMAP_MAX_PLANES, &v) || !v)
				return pb_usage_error("--generations: expected 1..%d", PBITMAP_MAX_PLANES);
			a.p.nr_planes = (unsigned int)v;
			break;
		case 't':
			if (!parse_uint(optarg, PBITMAP_MAX_PLANES, &v) || !v)
				return pb_usage_error("--threshold: expected 1..%d", PBITMAP_MAX_PLANES);
			a.p.threshold = (unsigned int)v;
			break;
		case 'S':
			if (!parse_uint(optarg, PBITMAP_MAX_PAGE_SHIFT, &v) ||
			    v < PBITMAP_MIN_PAGE_SHIFT)
				return pb_usage_error("--page-shift: expected %d..%d",
						   PBITMAP_MIN_PAGE_SHIFT, PBITMAP_MAX_PAGE_SHIFT);
			a.p.page_shift = (unsigned int)v;
			break;
		case 'N':
			a.p.flags |= PBITMAP_F_NO_LEARN;
			a.p.set_flags = true;
			break;
		case 'E':
			a.p.flags &= ~PBITMAP_F_NO_LEARN;
			a.p.set_flags = true;
			break;
		case 'X':
			if (!parse_size(optarg, &rest, &size) || *rest || size < 256 ||
			    size > 65536)
				return pb_usage_error("--xattr-max: expected 256..65536 bytes");
			a.p.xattr_max = size;
			break;
		case 'L':
			flags |= PB_OPEN_FOLLOW;
			break;
		case 'I':
			from_stdin = true;
			break;
		case 'U':
			summary = true;
			break;
		case 'q':
			pb_quiet = 1;
			break;
		case 'v':
			pb_verbose = 1;
			break;
		default:
			return pb_usage_error("add: unknown option");
		}
	}
	if (a.p.threshold && a.p.nr_planes && a.p.threshold > a.p.nr_planes)
		return pb_usage_error("--threshold %u exceeds --generations %u",
				   a.p.threshold, a.p.nr_planes);
	clock_gettime(CLOCK_MONOTONIC, &start);
	ret = for_each_file(argc, argv, from_stdin, flags, add_one, &a);
	if (summary && ret != PB_EXIT_USAGE)
		print_summary(&a, &start);
	return ret;
}

static int cmd_strip(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dereference", no_argument, NULL, 'L' },
		{ "stdin", no_argument, NULL, 'I' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ 0 }
	};
	unsigned int flags = 0;
	bool from_stdin = false;
	int c;

	while ((c = getopt_long(argc, argv, "Lqv", opts, NULL)) != -1) {
		switch (c) {
		case 'L': flags |= PB_OPEN_FOLLOW; break;
		case 'I': from_stdin = true; break;
		case 'q': pb_quiet = 1; break;
		case 'v': pb_verbose = 1; break;
		default: return pb_usage_error("strip: unknown option");
		}
	}
	return for_each_file(argc, argv, from_stdin, flags, strip_one, NULL);
}

/* ---- undo, digest ---------------------------------------------------------- */

static int write_sink(void *ctx, const void *buf, size_t len)
{
	FILE *out = ctx;

	return fwrite(buf, 1, len, out) != len;
}

static int cmd_undo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ 0 }
	};
	const char *output = NULL;
	FILE *out = stdout;
	struct pb_file f;
	int c, ret;

	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c != 'o')
			return pb_usage_error("undo: unknown option");
		output = optarg;
	}
	if (optind + 1 != argc)
		return pb_usage_error("undo: exactly one FILE expected");
	if (!output && isatty(STDOUT_FILENO))
		return pb_usage_error("undo: refusing to write binary data to a terminal; "
				   "redirect stdout or use -o");
	if (pb_open(&f, argv[optind], PB_OPEN_FOLLOW))
		return PB_EXIT_FAIL;
	if (output) {
		out = fopen(output, "wbx");
		if (!out) {
			pb_close(&f);
			pb_error_errno(output, "cannot create");
			return PB_EXIT_FAIL;
		}
	}
	ret = pb_read_original(&f, write_sink, out);
	if (ret == 0 && (fflush(out) || ferror(out)))
		ret = pb_error_errno(output ? output : "<stdout>", "write");
	if (output && fclose(out) && !ret)
		ret = pb_error_errno(output, "close");
	if (ret && output)
		unlink(output);
	pb_close(&f);
	return ret ? PB_EXIT_FAIL : PB_EXIT_OK;
}

static int digest_one(const char *path, unsigned int flags, void *arg)
{
	char hex[PB_DIGEST_HEX_MAX];
	struct pb_file f;
	int ret = pb_open(&f, path, flags | PB_OPEN_FOLLOW);

	if (ret)
		return ret;
	ret = pb_digest_original(&f, arg, hex);
	pb_close(&f);
	if (!ret)
		printf("%s  %s\n", hex, path);
	return ret;
}

static int cmd_digest(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "algo", required_argument, NULL, 'a' },
		{ 0 }
	};
	static const char *const algos[] = {
		"md5", "sha1", "sha224", "sha256", "sha384", "sha512", NULL
	};
	const char *algo = "sha256";
	int c, ret;
	bool known = false;

	while ((c = getopt_long(argc, argv, "a:", opts, NULL)) != -1) {
		if (c != 'a')
			return pb_usage_error("digest: unknown option");
		algo = optarg;
	}
	for (int i = 0; algos[i]; i++)
		known |= !strcmp(algo, algos[i]);
	if (!known)
		return pb_usage_error("--algo: expected md5, sha1, sha224, sha256, sha384 or sha512");
	ret = for_each_file(argc, argv, false, 0, digest_one, (void *)algo);
	if (fflush(stdout))
		return PB_EXIT_FAIL;
	return ret;
}

/* ---- show ------------------------------------------------------------------- */

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Print the runs of @plane as "a-b,c,..." or a JSON array of [first,last]. */
static void print_ranges(const unsigned char *plane, uint64_t nr_pages, bool json,
			 unsigned int limit)
{
	uint64_t first, count, from = 0;
	unsigned int n = 0;

	if (json)
		putchar('[');
	while (pb_next_run(plane, nr_pages, from, &first, &count)) {
		if (!json && limit && n == limit) {
			printf(",...");
			break;
		}
		if (json)
			printf("%s[%" PRIu64 ",%" PRIu64 "]", n ? "," : "", first,
			       first + count - 1);
		else if (count == 1)
			printf("%s%" PRIu64, n ? "," : "", first);
		else
			printf("%s%" PRIu64 "-%" PRIu64, n ? "," : "", first, first + count - 1);
		from = first + count;
		n++;
	}
	if (json)
		putchar(']');
	else if (!n)
		putchar('-');
}

static uint64_t count_runs(const unsigned char *plane, uint64_t nr_pages)
{
	uint64_t first, count, from = 0, n = 0;

	while (pb_next_run(plane, nr_pages, from, &first, &count)) {
		from = first + count;
		n++;
	}
	return n;
}

static void format_time(uint64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm))
		snprintf(buf, size, "never");
	else
		strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static void show_text(const struct pb_file *f, const unsigned char *eff)
{
	const struct pb_record *r = &f->rec;
	const struct pbitmap_header *h = pb_hdr(r);
	uint64_t pages = pb_nr_pages(r), marked = pb_count_bits(eff, pages);
	uint64_t granule = UINT64_C(1) << h->page_shift;
	char when[64];

	printf("%s:\n", f->path);
	if (f->kind == PB_KIND_ELF)
		printf("  stored in    ELF section %s at offset %#" PRIx64 ", %zu bytes\n",
		       PBITMAP_SECTION_NAME, pb_elf_record_offset(f), r->size);
	else
		printf("  stored in    extended attribute %s, %zu bytes uncompressed\n",
		       PBITMAP_XATTR_NAME, r->size);
	printf("  content      %" PRIu64 " bytes in %" PRIu64 " pages of %" PRIu64 " bytes\n",
	       (uint64_t)le64toh(h->content_size), pages, granule);
	if (f->kind == PB_KIND_DATA && (uint64_t)f->st.st_size != le64toh(h->content_size))
		printf("  note         the file is now %jd bytes; pages past the stamp are not covered\n",
		       (intmax_t)f->st.st_size);
	printf("  generations  %u, prefetch when marked in >= %u, newest plane %u\n",
	       h->nr_planes, h->threshold, h->newest_plane);
	format_time(le64toh(h->last_update), when, sizeof(when));
	printf("  runs         %" PRIu64 ", last update %s\n", (uint64_t)le64toh(h->runs), when);
	printf("  learning     %s\n", le32toh(h->flags) & PBITMAP_F_NO_LEARN ? "off (--no-learn)" : "on");
	printf("  age  marked  pages\n");
	for (unsigned int age = 0; age < h->nr_planes; age++) {
		const unsigned char *p = pb_plane(r, age);

		printf("  %3u  %6" PRIu64 "  ", age, pb_count_bits(p, pages));
		print_ranges(p, pages, false, pb_verbose ? 0 : 12);
		putchar('\n');
	}
	printf("  prefetch     %" PRIu64 " pages in %" PRIu64 " ranges, %" PRIu64 " bytes: ",
	       marked, count_runs(eff, pages), marked * granule);
	print_ranges(eff, pages, false, pb_verbose ? 0 : 12);
	putchar('\n');
}

static void show_json(const struct pb_file *f, const unsigned char *eff)
{
	const struct pb_record *r = &f->rec;
	const struct pbitmap_header *h = pb_hdr(r);
	uint64_t pages = pb_nr_pages(r), marked = pb_count_bits(eff, pages);

	printf("{\"file\":");
	json_string(f->path);
	printf(",\"kind\":\"%s\"", f->kind == PB_KIND_ELF ? "elf" : "xattr");
	if (f->kind == PB_KIND_ELF)
		printf(",\"record_offset\":%" PRIu64, pb_elf_record_offset(f));
	printf(",\"record_size\":%zu,\"content_size\":%" PRIu64 ",\"page_shift\":%u"
	       ",\"page_size\":%" PRIu64 ",\"pages\":%" PRIu64 ",\"generations\":%u"
	       ",\"threshold\":%u,\"newest_plane\":%u,\"runs\":%" PRIu64
	       ",\"last_update\":%" PRIu64 ",\"learn\":%s,\"planes\":[",
	       r->size, (uint64_t)le64toh(h->content_size), h->page_shift,
	       UINT64_C(1) << h->page_shift, pages, h->nr_planes, h->threshold,
	       h->newest_plane, (uint64_t)le64toh(h->runs), (uint64_t)le64toh(h->last_update),
	       le32toh(h->flags) & PBITMAP_F_NO_LEARN ? "false" : "true");
	for (unsigned int age = 0; age < h->nr_planes; age++) {
		const unsigned char *p = pb_plane(r, age);

		printf("%s{\"age\":%u,\"marked\":%" PRIu64 ",\"ranges\":", age ? "," : "",
		       age, pb_count_bits(p, pages));
		print_ranges(p, pages, true, 0);
		putchar('}');
	}
	printf("],\"prefetch\":{\"pages\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"ranges\":",
	       marked, marked << h->page_shift);
	print_ranges(eff, pages, true, 0);
	printf("}}");
}

/* Explain why a file has no usable record; PB_FAIL. */
static int no_record(const struct pb_file *f)
{
	if (f->interrupted)
		return pb_error(f->path, "interrupted stamp (the original is intact): "
				"run 'pbitmap add' or 'pbitmap strip' to repair");
	if (f->damage)
		return pb_error(f->path, "invalid bitmap: %s", f->damage);
	return pb_error(f->path, "has no bitmap");
}

struct show_args {
	bool json;
	unsigned int shown;
};

static int show_one(const char *path, unsigned int flags, void *arg)
{
	struct show_args *a = arg;
	unsigned char *eff;
	struct pb_file f;
	int ret = pb_open(&f, path, flags | PB_OPEN_FOLLOW);

	if (ret)
		return ret;
	if (!f.has_record) {
		ret = no_record(&f);
		pb_close(&f);
		return ret;
	}
	eff = malloc(le32toh(pb_hdr(&f.rec)->plane_size));
	if (!eff) {
		pb_close(&f);
		return pb_error_errno(path, "malloc");
	}
	pb_effective(&f.rec, eff);
	if (a->json) {
		printf("%s\n", a->shown ? "," : "");
		show_json(&f, eff);
	} else {
		show_text(&f, eff);
	}
	a->shown++;
	free(eff);
	pb_close(&f);
	return 0;
}

static int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ 0 }
	};
	struct show_args a = { 0 };
	int c, ret;

	while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
		if (c == 'j')
			a.json = true;
		else if (c == 'v')
			pb_verbose = 1;
		else
			return pb_usage_error("show: unknown option");
	}
	if (a.json)
		putchar('[');
	ret = for_each_file(argc, argv, false, 0, show_one, &a);
	if (a.json)
		printf("\n]\n");
	if (fflush(stdout))
		return PB_EXIT_FAIL;
	return ret;
}

/* ---- verify ----------------------------------------------------------------- */

static int verify_one(const char *path, unsigned int flags, void *arg)
{
	struct pb_file f;
	int ret = pb_open(&f, path, flags | PB_OPEN_FOLLOW);

	(void)arg;
	if (ret)
		return ret;
	if (!f.has_record)
		ret = no_record(&f);
	else if (!pb_quiet)
		printf("%s: OK: %" PRIu64 " pages, %u generations\n", path,
		       pb_nr_pages(&f.rec), pb_hdr(&f.rec)->nr_planes);
	pb_close(&f);
	return ret;
}

static int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "q", opts, NULL)) != -1) {
		if (c != 'q')
			return pb_usage_error("verify: unknown option");
		pb_quiet = 1;
	}
	return for_each_file(argc, argv, false, 0, verify_one, NULL);
}

/* ---- set, clear -------------------------------------------------------------- */

struct page_range {
	uint64_t first, last;		/* inclusive; in bytes or pages, see below */
	bool bytes;
};

struct edit_args {
	struct page_range *ranges;
	size_t n;
	bool set;
	bool all;
	int plane;			/* age, -1 for all planes */
};

static int add_range(struct edit_args *a, uint64_t first, uint64_t last, bool bytes)
{
	struct page_range *r = realloc(a->ranges, (a->n + 1) * sizeof(*r));

	if (!r)
		return -1;
	a->ranges = r;
	a->ranges[a->n++] = (struct page_range){ first, last, bytes };
	return 0;
}

/*
 * One item of a --pages or --ranges list.  Pages: "N", "N-M" (inclusive) or
 * "N+COUNT".  Bytes: "START-END" (END exclusive) or "START+LEN", with K, M,
 * G or T suffixes.  Stores the inclusive first and last unit.
 */
static const char *parse_item(const char *s, bool bytes, uint64_t *first, uint64_t *last)
{
	const char *rest;
	uint64_t second;
	char op;

	if (!parse_size(s, &rest, first) || (!bytes && rest[-1] > '9'))
		return NULL;
	op = *rest;
	if (op != '-' && op != '+') {
		*last = *first;
		return bytes ? NULL : rest;	/* a byte range needs an end */
	}
	if (!parse_size(rest + 1, &rest, &second) || (!bytes && rest[-1] > '9'))
		return NULL;
	if (op == '+') {
		if (!second || __builtin_add_overflow(*first, second - 1, last))
			return NULL;
	} else if (bytes) {
		if (second <= *first)
			return NULL;
		*last = second - 1;
	} else {
		if (second < *first)
			return NULL;
		*last = second;
	}
	return rest;
}

static bool parse_list(struct edit_args *a, const char *list, bool bytes)
{
	const char *s = list;

	while (*s) {
		uint64_t first, last;

		s = parse_item(s, bytes, &first, &last);
		if (!s || add_range(a, first, last, bytes))
			return false;
		if (*s == ',')
			s++;
		else if (*s)
			return false;
	}
	return a->n > 0;
}

static int edit_one(const char *path, unsigned int flags, void *arg)
{
	struct edit_args *a = arg;
	struct pb_file f;
	uint64_t pages;
	unsigned int shift, planes;
	int ret = pb_open(&f, path, flags | PB_OPEN_WRITE);

	if (ret)
		return ret;
	if (!f.has_record) {
		ret = no_record(&f);
		pb_close(&f);
		return ret;
	}
	pages = pb_nr_pages(&f.rec);
	shift = pb_page_shift(&f.rec);
	planes = pb_hdr(&f.rec)->nr_planes;
	if (a->plane >= (int)planes) {
		ret = pb_error(path, "--plane %d: the bitmap has %u generations", a->plane, planes);
		pb_close(&f);
		return ret;
	}
	for (unsigned int age = 0; age < planes; age++) {
		unsigned char *p = pb_plane(&f.rec, age);

		if (a->plane >= 0 && age != (unsigned int)a->plane)
			continue;
		if (a->all) {
			memset(p, 0, le32toh(pb_hdr(&f.rec)->plane_size));
			continue;
		}
		for (size_t i = 0; i < a->n; i++) {
			const struct page_range *r = &a->ranges[i];
			uint64_t first = r->bytes ? r->first >> shift : r->first;
			uint64_t last = r->bytes ? r->last >> shift : r->last;

			if (first >= pages) {
				ret = pb_error(path, "range starts past the last page %" PRIu64,
					       pages - 1);
				break;
			}
			if (last >= pages)
				last = pages - 1;
			for (uint64_t n = first; n <= last; n++) {
				if (a->set)
					pb_set_bit(p, n);
				else
					pb_clear_bit(p, n);
			}
		}
	}
	if (!ret)
		ret = pb_save(&f);
	pb_close(&f);
	return ret;
}

static int cmd_edit(int argc, char **argv, bool set)
{
	static const struct option opts[] = {
		{ "pages", required_argument, NULL, 'p' },
		{ "ranges", required_argument, NULL, 'r' },
		{ "plane", required_argument, NULL, 'P' },
		{ "all", no_argument, NULL, 'a' },
		{ "dereference", no_argument, NULL, 'L' },
		{ 0 }
	};
	struct edit_args a = { .set = set, .plane = -1 };
	unsigned int flags = 0;
	unsigned long long v;
	int c, ret;

	while ((c = getopt_long(argc, argv, "L", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
		case 'r':
			if (!parse_list(&a, optarg, c == 'r')) {
				free(a.ranges);
				return pb_usage_error(c == 'p' ?
					"--pages: expected N,N-M,... (page numbers)" :
					"--ranges: expected START-END,START+LEN,... (bytes, K/M/G suffixes)");
			}
			break;
		case 'P':
			if (!parse_uint(optarg, PBITMAP_MAX_PLANES - 1, &v)) {
				free(a.ranges);
				return pb_usage_error("--plane: expected an age, 0 (newest) to %d",
						   PBITMAP_MAX_PLANES - 1);
			}
			a.plane = (int)v;
			break;
		case 'a':
			a.all = true;
			break;
		case 'L':
			flags |= PB_OPEN_FOLLOW;
			break;
		default:
			free(a.ranges);
			return pb_usage_error("%s: unknown option", argv[0]);
		}
	}
	if (a.all && set) {
		free(a.ranges);
		return pb_usage_error("set: --all is only for clear");
	}
	if (!a.n && !a.all)
		return pb_usage_error("%s: give --pages or --ranges%s", argv[0], set ? "" : " or --all");
	ret = for_each_file(argc, argv, false, flags, edit_one, &a);
	free(a.ranges);
	return ret;
}

/* ---- merge ------------------------------------------------------------------- */

static bool same_geometry(const struct pb_record *a, const struct pb_record *b)
{
	const struct pbitmap_header *x = pb_hdr(a), *y = pb_hdr(b);

	return x->page_shift == y->page_shift && x->nr_pages == y->nr_pages &&
	       x->content_size == y->content_size;
}

static int cmd_merge(int argc, char **argv)
{
	struct pb_file dest;
	struct tally t = { 0 };
	int ret;

	if (getopt_long(argc, argv, "", no_long_options, NULL) != -1)
		return pb_usage_error("merge: unknown option");
	if (argc - optind < 2)
		return pb_usage_error("merge: DEST and at least one SRC expected");
	ret = pb_open(&dest, argv[optind], PB_OPEN_WRITE);
	if (ret)
		return ret == PB_SKIPPED ? PB_EXIT_SKIPPED : PB_EXIT_FAIL;
	if (!dest.has_record) {
		no_record(&dest);
		pb_close(&dest);
		return PB_EXIT_FAIL;
	}
	for (int i = optind + 1; i < argc; i++) {
		struct pb_file src;
		unsigned int gens;

		if (pb_open(&src, argv[i], PB_OPEN_FOLLOW)) {
			t.failed++;
			continue;
		}
		if (!src.has_record) {
			tally_add(&t, no_record(&src));
		} else if (!same_geometry(&dest.rec, &src.rec)) {
			tally_add(&t, pb_error(argv[i], "covers different content or uses another "
					       "granule than %s", dest.path));
		} else {
			gens = pb_hdr(&src.rec)->nr_planes;
			if (gens > pb_hdr(&dest.rec)->nr_planes)
				gens = pb_hdr(&dest.rec)->nr_planes;
			for (unsigned int age = 0; age < gens; age++) {
				unsigned char *d = pb_plane(&dest.rec, age);
				const unsigned char *s = pb_plane(&src.rec, age);

				for (uint32_t b = 0; b < le32toh(pb_hdr(&src.rec)->plane_size); b++)
					d[b] |= s[b];
			}
		}
		pb_close(&src);
	}
	if (!t.failed)
		tally_add(&t, pb_save(&dest));
	pb_close(&dest);
	return tally_exit(&t);
}

/* ---- dispatch ---------------------------------------------------------------- */

struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
};

static int cmd_set(int argc, char **argv)
{
	return cmd_edit(argc, argv, true);
}

static int cmd_clear(int argc, char **argv)
{
	return cmd_edit(argc, argv, false);
}

static const struct verb verbs[] = {
	{ "add", cmd_add },
	{ "strip", cmd_strip },
	{ "undo", cmd_undo },
	{ "digest", cmd_digest },
	{ "show", cmd_show },
	{ "verify", cmd_verify },
	{ "set", cmd_set },
	{ "clear", cmd_clear },
	{ "merge", cmd_merge },
	{ "record", pb_cmd_record },
	{ "prefetch", pb_cmd_prefetch },
	{ "run", pb_cmd_run },
	{ "stamp", pb_cmd_stamp },
	{ "rpm-verify", pb_cmd_rpm_verify },
};

static const struct verb *find_verb(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(name, verbs[i].name))
			return &verbs[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;
	const struct verb *verb;

	if (!name)
		return pb_usage_error("no VERB given");
	if (!strcmp(name, "help") && argc > 2 && !find_verb(argv[2]))
		return pb_usage_error("help: unknown verb '%s'", argv[2]);
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
		fputs(usage_text, stdout);
		return PB_EXIT_OK;
	}
	if (!strcmp(name, "--version")) {
		printf("pbitmap %s (format version %d)\n", PBITMAP_VERSION_STRING,
		       PBITMAP_VERSION);
		return PB_EXIT_OK;
	}
	verb = find_verb(name);
	if (!verb)
		return pb_usage_error("unknown verb '%s'", name);
	/* Only right after the verb: "record -- CMD -h" is CMD's option. */
	if (argc > 2 && (!strcmp(argv[2], "-h") || !strcmp(argv[2], "--help"))) {
		fputs(usage_text, stdout);
		return PB_EXIT_OK;
	}
	optind = 1;
	return verb->run(argc - 1, argv + 1);
}
