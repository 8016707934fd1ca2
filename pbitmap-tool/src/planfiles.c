// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A start-up plan from files (docs/FORMAT.md, "Start-up plan"): each
 * file's identity and the ranges to read of it, built into the plan area
 * of an opened program.  One writer for both that write plans from user
 * space: `pbitmap plan` (cmd-plan.c: the files named, in the order given,
 * any file that cannot be planned an error) and pbitmapd's learning
 * (daemon/learn.c: the files a run faulted on, in first-fault order, with
 * the pages it faulted for a file without a bitmap; a file that cannot be
 * planned is left out).  plan.c lays the area's bytes out.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>

#include "pbitmap.h"

#define UNIT_SHIFT	PBITMAP_PLAN_UNIT_SHIFT
/* A file without a bitmap is planned whole; above this, that is said. */
#define PLAN_WHOLE_WARN	(UINT64_C(1) << 20)

struct plan_file {
	struct pb_plan_file_in in;
	char *path;
	struct pb_plan_range *ranges;
	size_t cap;
};

static void free_files(struct plan_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].ranges);
	}
	free(v);
}

static int add_range(struct plan_file *pf, uint64_t start, uint64_t nr)
{
	if (pf->in.nr_ranges == pf->cap) {
		size_t n = pf->cap ? 2 * pf->cap : 16;
		struct pb_plan_range *r = realloc(pf->ranges, n * sizeof(*r));

		if (!r)
			return PB_FAIL;
		pf->ranges = r;
		pf->cap = n;
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
			ret = add_range(pf, start, end - start);
	}
	free(eff);
	return ret;
}

/* The caller's ranges, within the file's @units; none given: all of them. */
static int given_ranges(struct plan_file *pf, const struct pb_plan_src *src, uint64_t units)
{
	int ret = 0;

	if (!src->ranges) {
		if ((uint64_t)pf->in.size > PLAN_WHOLE_WARN)
			pb_note(src->path, "no bitmap: the plan reads all of its %" PRIu64 " bytes",
				pf->in.size);
		return add_range(pf, 0, units);
	}
	for (size_t i = 0; !ret && i < src->nr_ranges; i++) {
		uint64_t start = src->ranges[i].start, end = start + src->ranges[i].nr;

		if (end > units)
			end = units;
		if (start < end)
			ret = add_range(pf, start, end - start);
	}
	return ret;
}

/* Why the opened file @f cannot be in a plan as @src, or NULL. */
static const char *unplannable(const struct pb_file *f, const struct pb_plan_src *src)
{
	if (!S_ISREG(f->st.st_mode))
		return "not a regular file";
	if ((src->dev || src->ino) && (f->st.st_dev != src->dev || f->st.st_ino != src->ino))
		return "no longer the file it was (renamed or replaced)";
	if (major(f->st.st_dev) >= 4096)
		return "device number too large for a plan";
	if (f->st.st_size == 0)
		return "empty file: nothing to read";
	if ((uint64_t)f->st.st_size >> UNIT_SHIFT >= UINT32_MAX)
		return "file too large for a plan";
	return NULL;
}

/* The identity and ranges of the opened file @f: 0, PB_FAIL, PB_NONE (nothing to read). */
static int plan_opened(struct plan_file *pf, struct pb_file *f, const struct pb_plan_src *src,
		       unsigned int flags)
{
	unsigned int gen = 0;
	int ret;

	/* Not every filesystem has generations; the kernel then sees 0 too. */
	if (ioctl(f->fd, FS_IOC_GETVERSION, &gen))
		gen = 0;
	pf->in.ino = (uint64_t)f->st.st_ino;
	pf->in.size = (uint64_t)f->st.st_size;
	pf->in.dev = (uint32_t)f->st.st_dev;
	pf->in.generation = gen;
	pf->in.path = pf->path;
	if (f->has_record)
		ret = marked_ranges(pf, &f->rec, pb_content_size(f));
	else
		ret = given_ranges(pf, src, (pf->in.size + (1u << UNIT_SHIFT) - 1) >> UNIT_SHIFT);
	pf->in.ranges = pf->ranges;
	if (ret)
		return pb_error_errno(src->path, "out of memory");
	if (!pf->in.nr_ranges && (flags & PB_PLAN_LEAVE_OUT))
		return PB_NONE;	/* nothing to read: not worth a look-up at every exec */
	if (!pf->in.nr_ranges && pb_verbose)
		pb_note(src->path, "its bitmap marks no page: planned with no range");
	return 0;
}

/*
 * Identity and ranges of one file: 0, PB_FAIL (said), or PB_NONE, when
 * PB_PLAN_LEAVE_OUT leaves it out (said with -v).  With PB_PLAN_RESOLVE
 * the path is made absolute and free of symbolic links: the kernel
 * resolves it again at exec, as the exec'ing user, and checks it still
 * leads to this inode.
 */
static int plan_one(struct plan_file *pf, const struct pb_plan_src *src, unsigned int flags)
{
	bool leave_out = flags & PB_PLAN_LEAVE_OUT;
	const char *why = NULL;
	struct pb_file f;
	int ret;

	pf->path = flags & PB_PLAN_RESOLVE ? realpath(src->path, NULL) : strdup(src->path);
	if (!pf->path)
		return pb_error_errno(src->path, flags & PB_PLAN_RESOLVE ?
				      "cannot resolve the path" : "out of memory");
	if (strlen(pf->path) >= PB_PLAN_PATH_MAX)
		why = "path too long for a plan";
	else if (pf->path[0] != '/')
		why = "not an absolute path";
	if (!why) {
		unsigned int oflags = flags & PB_PLAN_RESOLVE ? PB_OPEN_FOLLOW : 0;

		/* a known identity: nothing read of whatever else the name leads to */
		errno = 0;
		ret = src->dev || src->ino ? pb_open_same(&f, pf->path, oflags, src->dev, src->ino) :
					     pb_open(&f, pf->path, oflags);
		if (ret == PB_NONE && (src->dev || src->ino) && errno == ESTALE) {
			why = "no longer the file it was (renamed or replaced)";
		} else if (ret) {	/* said, but for PB_NONE */
			return leave_out ? PB_NONE : ret == PB_NONE ? PB_FAIL : ret;
		} else {
			why = unplannable(&f, src);
			ret = why ? 0 : plan_opened(pf, &f, src, flags);
			pb_close(&f);
			if (!why)
				return ret;
		}
	}
	if (!leave_out)
		return pb_error(src->path, "%s", why);
	if (pb_verbose)
		pb_note(src->path, "left out of the plan: %s", why);
	return PB_NONE;
}

static void drop(struct plan_file *pf)
{
	free(pf->path);
	free(pf->ranges);
	memset(pf, 0, sizeof(*pf));
}

/*
 * A plan names each file once (the kernel refuses a plan with two entries
 * for one device and inode, however the paths are spelled).  Files are
 * few (PBITMAP_PLAN_MAX_FILES), so pairs are compared directly.  With
 * PB_PLAN_LEAVE_OUT a later entry for a file is dropped, else an error
 * (@v is then @src, one for one).
 */
static int one_entry_per_file(struct plan_file *v, size_t *n, const struct pb_plan_src *src,
			      unsigned int flags)
{
	for (size_t i = 1; i < *n; i++)
		for (size_t j = 0; j < i; j++) {
			if (v[i].in.dev != v[j].in.dev || v[i].in.ino != v[j].in.ino)
				continue;
			if (!(flags & PB_PLAN_LEAVE_OUT))
				return pb_error(src[i].path, "the same file as %s: a plan names "
						"each file once", src[j].path);
			drop(&v[i]);
			memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof(*v));
			memset(&v[--*n], 0, sizeof(*v));
			i--;
			break;
		}
	return 0;
}

/* Plan the files of @src into @v; *@n: how many, then how many planned. */
static int plan_files(struct plan_file *v, const struct pb_plan_src *src, size_t *n,
		      unsigned int flags)
{
	size_t planned = 0;
	int ret = 0;

	for (size_t i = 0; !ret && i < *n && planned < PBITMAP_PLAN_MAX_FILES; i++) {
		ret = plan_one(&v[planned], &src[i], flags);
		if (ret == PB_NONE) {
			drop(&v[planned]);
			ret = 0;
		} else if (!ret) {
			planned++;
		}
	}
	*n = planned;
	return ret ? ret : one_entry_per_file(v, n, src, flags);
}

int pb_plan_fill(struct pb_file *prog, const struct pb_plan_src *src, size_t nr,
		 unsigned int flags, struct pb_plan_stats *stats)
{
	struct plan_file *v = NULL;
	struct pb_plan_file_in *in = NULL;
	unsigned char *area = pb_plan_area(&prog->rec, &stats->area);
	size_t n = nr;
	int ret = 0;

	stats->files = stats->units = stats->used = 0;
	if (nr > PBITMAP_PLAN_MAX_FILES && !(flags & PB_PLAN_LEAVE_OUT))
		return pb_error(prog->path, "a plan holds at most %d files", PBITMAP_PLAN_MAX_FILES);
	v = calloc(nr ? nr : 1, sizeof(*v));
	in = calloc(nr ? nr : 1, sizeof(*in));
	if (!v || !in) {
		ret = pb_error_errno(prog->path, "out of memory");
		goto out;
	}
	ret = plan_files(v, src, &n, flags);
	if (ret)
		goto out;
	for (size_t i = 0; i < n; i++) {
		in[i] = v[i].in;
		for (size_t j = 0; j < in[i].nr_ranges; j++)
			stats->units += in[i].ranges[j].nr;
	}
	/* on failure the area is as it was: pb_plan_build() writes only a plan that fits */
	if (!n) {
		ret = pb_error(prog->path, "no file left to plan");
	} else if (pb_plan_build(area, stats->area, in, n, &stats->used)) {
		ret = errno == ENOSPC ?
		      pb_error(prog->path, "the plan takes %zu bytes, its area has %zu: stamp it "
			       "again with a larger --plan-size", stats->used, stats->area) :
		      pb_error(prog->path, "more ranges or names than a plan holds");
	}
	stats->files = n;
out:
	if (v)
		free_files(v, nr);
	free(in);
	return ret;
}
