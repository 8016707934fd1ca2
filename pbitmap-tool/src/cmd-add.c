// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap add, pbitmap strip: put an empty bitmap into files, take it out.
 * Also the stamping of a list of paths for rpm (pb_stamp_lines).
 */
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pbitmap.h"

#include "cli.h"

/* What add did, for --summary. */
struct add_args {
	struct pb_params p;
	unsigned long stamped, already, skipped, errors, passed;
};

/*
 * Nothing asked to change: add leaves a file that has a bitmap as it is,
 * unless it is an executable without a plan area, which a re-stamp gives
 * the default one (pb_plan_size_for()).
 */
static bool keeps_existing(const struct pb_file *f, const struct pb_params *p)
{
	return !p->nr_planes && !p->threshold && !p->page_shift && !p->set_flags &&
	       !p->set_plan && pb_plan_size_for(f, p) == le32toh(pb_hdr(&f->rec)->plan_size);
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

/*
 * A stamped ELF file whose user.pbitmap marker is missing or stale (copied
 * without attributes) is not prefetched by the kernel: add restores the
 * marker and counts the file as stamped, as it was not fully stamped before.
 */
static bool marker_to_restore(const struct pb_file *f)
{
	return f->has_record && f->store->has_marker &&
	       (f->marker == PB_MARKER_MISSING || f->marker == PB_MARKER_STALE);
}

static int stamp_one(const char *path, unsigned int flags, struct add_args *a)
{
	struct pb_file f;
	bool stamped;
	int ret = pb_open(&f, path, flags | PB_OPEN_WRITE);

	if (ret)
		return count_add(a, ret, false);
	stamped = !f.has_record || marker_to_restore(&f);
	ret = pb_stamp(&f, &a->p);
	if (!ret && pb_verbose)
		pb_note(path, "stamped: %" PRIu64 " pages, %u generations, %" PRIu32
			"-byte plan area", pb_nr_pages(&f.rec), pb_hdr(&f.rec)->nr_planes,
			le32toh(pb_hdr(&f.rec)->plan_size));
	pb_close(&f);
	return count_add(a, ret, stamped);
}

/*
 * A read-only look first: a file that keeps its bitmap (and its marker)
 * needs no write access, so a stamped file its user may not write stays
 * "already stamped".
 */
static int add_one(const char *path, unsigned int flags, void *arg)
{
	struct add_args *a = arg;
	struct pb_file f;
	int ret = pb_open(&f, path, flags);

	if (ret)
		return count_add(a, ret, false);
	if (f.has_record && keeps_existing(&f, &a->p) && !marker_to_restore(&f)) {
		if (f.marker == PB_MARKER_UNSUPPORTED)
			pb_marker_warn_unsupported(&f);
		else if (pb_verbose)
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
	struct pb_line_source src = { in, root, prefixes };
	struct add_args a = { 0 };
	struct timespec start;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	ret = pb_for_each_line(&src, 0, add_one, &a);
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

int pb_cmd_add(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "generations", required_argument, NULL, 'g' },
		{ "threshold", required_argument, NULL, 't' },
		{ "page-shift", required_argument, NULL, 'S' },
		{ "no-learn", no_argument, NULL, 'N' },
		{ "learn", optional_argument, NULL, 'E' },
		{ "xattr-max", required_argument, NULL, 'X' },
		{ "plan-size", required_argument, NULL, 'P' },
		{ "dereference", no_argument, NULL, 'L' },
		{ "break-links", no_argument, NULL, 'B' },
		{ "stdin", no_argument, NULL, 'I' },
		{ "summary", no_argument, NULL, 'U' },
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

	while ((c = pb_getopt(argc, argv, "g:t:L", opts)) != -1) {
		switch (c) {
		case 'g':
			if (!pb_parse_uint(optarg, PBITMAP_MAX_PLANES, &v) || !v)
				return pb_usage_error("--generations: expected 1..%d", PBITMAP_MAX_PLANES);
			a.p.nr_planes = (unsigned int)v;
			break;
		case 't':
			if (!pb_parse_uint(optarg, PBITMAP_MAX_PLANES, &v) || !v)
				return pb_usage_error("--threshold: expected 1..%d", PBITMAP_MAX_PLANES);
			a.p.threshold = (unsigned int)v;
			break;
		case 'S':
			if (!pb_parse_uint(optarg, PBITMAP_MAX_PAGE_SHIFT, &v) ||
			    v < PBITMAP_MIN_PAGE_SHIFT)
				return pb_usage_error("--page-shift: expected %d..%d",
						   PBITMAP_MIN_PAGE_SHIFT, PBITMAP_MAX_PAGE_SHIFT);
			a.p.page_shift = (unsigned int)v;
			break;
		case 'N':
			a.p.flags &= ~PBITMAP_F_LEARN_EVERY;
			a.p.flags |= PBITMAP_F_NO_LEARN;
			a.p.set_flags = true;
			break;
		case 'E':
			a.p.flags &= ~(PBITMAP_F_NO_LEARN | PBITMAP_F_LEARN_EVERY);
			if (!optarg || !strcmp(optarg, "owner"))
				;
			else if (!strcmp(optarg, "every"))
				a.p.flags |= PBITMAP_F_LEARN_EVERY;
			else if (!strcmp(optarg, "never"))
				a.p.flags |= PBITMAP_F_NO_LEARN;
			else
				return pb_usage_error("--learn: expected never, owner or every, not '%s'",
						      optarg);
			a.p.set_flags = true;
			break;
		case 'X':
			if (!pb_parse_size(optarg, &rest, &size) || *rest || size < 256 ||
			    size > 65536)
				return pb_usage_error("--xattr-max: expected 256..65536 bytes");
			a.p.xattr_max = size;
			break;
		case 'P':
			if (!pb_parse_size(optarg, &rest, &size) || *rest ||
			    size % PBITMAP_PLAN_ALIGN || size > PBITMAP_PLAN_MAX_SIZE ||
			    (size && size < sizeof(struct pbitmap_plan)))
				return pb_usage_error("--plan-size: expected 0, or %zu..%u bytes in "
						      "multiples of %d", sizeof(struct pbitmap_plan),
						      PBITMAP_PLAN_MAX_SIZE, PBITMAP_PLAN_ALIGN);
			a.p.plan_size = size;
			a.p.set_plan = true;
			break;
		case 'L':
			flags |= PB_OPEN_FOLLOW;
			break;
		case 'B':
			flags |= PB_OPEN_BREAK_LINKS;
			break;
		case 'I':
			from_stdin = true;
			break;
		case 'U':
			summary = true;
			break;
		default:
			return pb_option_exit(c);
		}
	}
	if (a.p.threshold && a.p.nr_planes && a.p.threshold > a.p.nr_planes)
		return pb_usage_error("--threshold %u exceeds --generations %u",
				   a.p.threshold, a.p.nr_planes);
	clock_gettime(CLOCK_MONOTONIC, &start);
	ret = pb_for_each_file(argc, argv, from_stdin, flags, add_one, &a);
	if (summary && ret != PB_EXIT_USAGE)
		print_summary(&a, &start);
	return ret;
}

int pb_cmd_strip(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dereference", no_argument, NULL, 'L' },
		{ "break-links", no_argument, NULL, 'B' },
		{ "stdin", no_argument, NULL, 'I' },
		{ 0 }
	};
	unsigned int flags = 0;
	bool from_stdin = false;
	int c;

	while ((c = pb_getopt(argc, argv, "L", opts)) != -1) {
		switch (c) {
		case 'L': flags |= PB_OPEN_FOLLOW; break;
		case 'B': flags |= PB_OPEN_BREAK_LINKS; break;
		case 'I': from_stdin = true; break;
		default: return pb_option_exit(c);
		}
	}
	return pb_for_each_file(argc, argv, from_stdin, flags, strip_one, NULL);
}
