// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `pbitmap plan [--clear] PROGRAM FILE...`: write PROGRAM's start-up
 * plan: the FILEs, in the order given (the order in which the start-up
 * first touches them), each with its identity and the ranges its own
 * bitmap marks, or the whole file when it has no bitmap.  PROGRAM itself
 * is not in it: exec reads PROGRAM's record anyway and prefetches from it,
 * and a plan naming its own file would go stale with every write of it.  PROGRAM
 * must have a plan area (`pbitmap add --plan-size`).  The plan has no order
 * table: the steps' own order, the FILEs', is the order they are read in.
 * The kernel reads the plan at exec and submits every range in one batch
 * (docs/FORMAT.md, "Start-up plan").
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "pbitmap.h"
#include "cli.h"

#define UNIT_SHIFT	PBITMAP_PLAN_UNIT_SHIFT
/* A file without a bitmap is planned whole; above this, that is said. */
#define PLAN_WHOLE_WARN	(UINT64_C(1) << 20)

struct plan_file {
	struct pb_plan_file_in in;
	char *path;
	struct pb_plan_range *ranges;
};

static void free_files(struct plan_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].ranges);
	}
	free(v);
}

static int add_range(struct plan_file *pf, size_t *cap, uint64_t start, uint64_t nr)
{
	if (pf->in.nr_ranges == *cap) {
		size_t n = *cap ? 2 * *cap : 16;
		struct pb_plan_range *r = realloc(pf->ranges, n * sizeof(*r));

		if (!r)
			return PB_FAIL;
		pf->ranges = r;
		*cap = n;
	}
	pf->ranges[pf->in.nr_ranges++] = (struct pb_plan_range){
		.start = (uint32_t)start, .nr = (uint32_t)nr };
	return 0;
}

/* The ranges a record marks, in plan units, within @size bytes. */
static int marked_ranges(struct plan_file *pf, const struct pb_record *r, uint64_t size)
{
	uint64_t pages = pb_nr_pages(r), first, count, from = 0;
	unsigned int shift = pb_page_shift(r) - UNIT_SHIFT;
	uint64_t units = (size + (1u << UNIT_SHIFT) - 1) >> UNIT_SHIFT;
	unsigned char *eff = malloc(le32toh(pb_hdr(r)->plane_size));
	size_t cap = 0;
	int ret = 0;

	if (!eff)
		return PB_FAIL;
	pb_effective(r, eff);
	while (!ret && pb_next_run(eff, pages, from, &first, &count)) {
		uint64_t start = first << shift, end = (first + count) << shift;

		from = first + count;
		if (end > units)
			end = units;
		if (start < end)
			ret = add_range(pf, &cap, start, end - start);
	}
	free(eff);
	return ret;
}

/*
 * Identity and ranges of one file.  The path is made absolute and free of
 * symbolic links: the kernel resolves it again at exec, as the exec'ing
 * user, and checks it still leads to this inode.
 */
static int plan_one(struct plan_file *pf, const char *path)
{
	struct pb_file f;
	unsigned int gen = 0;
	size_t cap = 0;
	int ret;

	pf->path = realpath(path, NULL);
	if (!pf->path)
		return pb_error_errno(path, "cannot resolve the path");
	if (strlen(pf->path) >= PB_PLAN_PATH_MAX)
		return pb_error(path, "path too long for a plan");
	ret = pb_open(&f, pf->path, PB_OPEN_FOLLOW);
	if (ret)
		return ret;
	if (!S_ISREG(f.st.st_mode)) {
		pb_close(&f);
		return pb_error(path, "not a regular file");
	}
	if (major(f.st.st_dev) >= 4096) {
		pb_close(&f);
		return pb_error(path, "device number too large for a plan");
	}
	if (f.st.st_size == 0 || (uint64_t)f.st.st_size >> UNIT_SHIFT >= UINT32_MAX) {
		pb_close(&f);
		return pb_error(path, f.st.st_size ? "file too large for a plan" :
				"empty file: nothing to read");
	}
	/* Not every filesystem has generations; the kernel then sees 0 too. */
	if (ioctl(f.fd, FS_IOC_GETVERSION, &gen))
		gen = 0;
	pf->in.ino = (uint64_t)f.st.st_ino;
	pf->in.size = (uint64_t)f.st.st_size;
	pf->in.dev = (uint32_t)f.st.st_dev;
	pf->in.generation = gen;
	if (f.has_record) {
		ret = marked_ranges(pf, &f.rec, pb_content_size(&f));
		if (!ret && !pf->in.nr_ranges && pb_verbose)
			pb_note(path, "its bitmap marks no page: planned with no range");
	} else {
		if ((uint64_t)f.st.st_size > PLAN_WHOLE_WARN)
			pb_note(path, "no bitmap: the plan reads all of its %jd bytes",
				(intmax_t)f.st.st_size);
		ret = add_range(pf, &cap, 0, ((uint64_t)f.st.st_size +
					      (1u << UNIT_SHIFT) - 1) >> UNIT_SHIFT);
	}
	if (ret)
		ret = pb_error_errno(path, "out of memory");
	pf->in.path = pf->path;
	pf->in.ranges = pf->ranges;
	pb_close(&f);
	return ret;
}

/*
 * A plan names each file once (the kernel refuses a plan with two entries
 * for one device and inode, however the paths are spelled).  Files are
 * few (PBITMAP_PLAN_MAX_FILES), so pairs are compared directly.
 */
static int one_entry_per_file(const struct plan_file *v, size_t n, char **files)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (v[i].in.dev == v[j].in.dev && v[i].in.ino == v[j].in.ino)
				return pb_error(files[i], "the same file as %s: a plan names "
						"each file once", files[j]);
	return 0;
}

static int write_plan(const char *program, char **files, int nr, bool clear)
{
	struct plan_file *v = NULL;
	struct pb_plan_file_in *in = NULL;
	unsigned char *area;
	size_t size, need, n = (size_t)nr, units = 0;
	struct pb_file f;
	int ret;

	ret = pb_open_record(&f, program, PB_OPEN_WRITE | PB_OPEN_ELF_ONLY);
	if (ret)
		return ret == PB_NONE ? pb_error(program, "not an ELF file") : ret;
	area = pb_plan_area(&f.rec, &size);
	if (!size) {
		ret = pb_error(program, "no room for a plan: stamp it with "
			       "'pbitmap add --plan-size SIZE %s'", program);
		goto out;
	}
	if (clear) {
		memset(area, 0, size);
		ret = pb_save(&f);
		goto out;
	}
	if (n > PBITMAP_PLAN_MAX_FILES) {
		ret = pb_error(program, "a plan holds at most %d files", PBITMAP_PLAN_MAX_FILES);
		goto out;
	}
	v = calloc(n, sizeof(*v));
	in = calloc(n, sizeof(*in));
	if (!v || !in) {
		ret = pb_error_errno(program, "out of memory");
		goto out;
	}
	for (size_t i = 0; !ret && i < n; i++)
		ret = plan_one(&v[i], files[i]);
	if (!ret)
		ret = one_entry_per_file(v, n, files);
	if (ret)
		goto out;
	for (size_t i = 0; i < n; i++) {
		in[i] = v[i].in;
		for (size_t j = 0; j < in[i].nr_ranges; j++)
			units += in[i].ranges[j].nr;
	}
	if (pb_plan_build(area, size, in, n, &need)) {
		ret = errno == ENOSPC ?
		      pb_error(program, "the plan takes %zu bytes, its area has %zu: stamp it "
			       "again with a larger --plan-size", need, size) :
		      pb_error(program, "more ranges or names than a plan holds");
		goto out;
	}
	ret = pb_save(&f);
	if (!ret && pb_verbose)
		pb_note(program, "plan: %zu files, %zu KiB, %zu of %zu bytes", n,
			units << (UNIT_SHIFT - 10), need, size);
out:
	if (v)
		free_files(v, n);
	free(in);
	pb_close(&f);
	return ret;
}

int pb_cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "clear", no_argument, NULL, 'c' },
		{ 0 }
	};
	bool clear = false;
	int c;

	while ((c = pb_getopt(argc, argv, "", opts)) != -1) {
		if (c != 'c')
			return pb_option_exit(c);
		clear = true;
	}
	if (optind >= argc)
		return pb_usage_error("plan: no PROGRAM given");
	if (clear && optind + 1 < argc)
		return pb_usage_error("plan: --clear takes only PROGRAM");
	if (!clear && optind + 1 >= argc)
		return pb_usage_error("plan: no FILE given (--clear empties the plan)");
	if (write_plan(argv[optind], argv + optind + 1, argc - optind - 1, clear))
		return PB_EXIT_FAIL;
	return pb_flush_stdout();
}
