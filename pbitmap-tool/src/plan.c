// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The start-up plan in a record's plan area (include/uapi/linux/pbitmap.h,
 * docs/FORMAT.md "Start-up plan"): checking one, as the kernel does,
 * carrying one into a re-stamped record, and building one.  Nothing here
 * touches files.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbitmap.h"

#define UNIT	(UINT64_C(1) << PBITMAP_PLAN_UNIT_SHIFT)

/* pb_plan_check()'s message when it names a value */
static char fault_msg[128];

/* Bytes of a plan: head, files, steps, the order table (@order), names. */
static size_t plan_bytes(uint64_t nr_files, uint64_t nr_steps, uint64_t names, bool order)
{
	uint64_t n = sizeof(struct pbitmap_plan) +
		     nr_files * sizeof(struct pbitmap_plan_file) +
		     nr_steps * sizeof(struct pbitmap_plan_step) +
		     (order ? nr_steps * sizeof(pbitmap_plan_order_t) : 0) + names;

	return n > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)n;
}

/*
 * Where a metadata table's head starts, after a plan of @bytes without it:
 * the next multiple of 8 bytes from the area's start, so that its 64-bit
 * fields are aligned.  @bytes is at most SIZE_MAX / 2 (plan_bytes()).
 */
static size_t meta_at(size_t bytes)
{
	return (bytes + 7) & ~(size_t)7;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int cmp_identity(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/*
 * The canonical form the kernel enforces (docs/FORMAT.md, "Start-up
 * plan"): the steps sorted by file entry, then by start, a file's ranges
 * disjoint, and one entry per file (device and inode).  An entry is used
 * only when its path leads to the inode it names, so two entries that
 * name different inodes can never be one file, however their paths are
 * spelled.  What a plan of this form makes the kernel examine is bounded
 * by the pages it names.
 */
static const char *plan_canonical(const struct pbitmap_plan_file *files, uint32_t nr_files,
				  const struct pbitmap_plan_step *steps, uint32_t nr_steps)
{
	uint64_t ids[PBITMAP_PLAN_MAX_FILES][2], prev_end = 0;
	uint32_t prev_file = 0;

	for (uint32_t i = 0; i < nr_steps; i++) {
		uint32_t file = le16toh(steps[i].file);
		uint64_t start = le32toh(steps[i].start);

		if (i && (file < prev_file || (file == prev_file && start < prev_end)))
			return "plan: ranges not sorted by file and start, or overlapping (not canonical)";
		prev_file = file;
		prev_end = start + le32toh(steps[i].nr);
	}
	for (uint32_t i = 0; i < nr_files; i++) {
		ids[i][0] = le32toh(files[i].dev);
		ids[i][1] = le64toh(files[i].ino);
	}
	qsort(ids, nr_files, sizeof(ids[0]), cmp_identity);
	for (uint32_t i = 1; i < nr_files; i++)
		if (!cmp_identity(ids[i - 1], ids[i]))
			return "plan: two entries name one file (not canonical)";
	return NULL;
}

#define NOT_PERMUTATION	"plan: order table is not a permutation of the steps"

/*
 * The order table (docs/FORMAT.md, "Start-up plan"): each step's index
 * exactly once.  Indices are 16 bits: the bitmap of those seen is 8 KiB.
 * The message names the first entry that breaks the rule.
 */
static const char *plan_order(const pbitmap_plan_order_t *order, uint32_t nr_steps)
{
	uint64_t seen[65536 / 64] = { 0 };

	for (uint32_t i = 0; i < nr_steps; i++) {
		unsigned int s = le16toh(order[i]);

		if (s >= nr_steps) {
			snprintf(fault_msg, sizeof(fault_msg), "%s: entry %u names step %u (the plan "
				 "has %u steps)", NOT_PERMUTATION, i, s, nr_steps);
			return fault_msg;
		}
		if (seen[s / 64] & (UINT64_C(1) << (s % 64))) {
			snprintf(fault_msg, sizeof(fault_msg), "%s: entry %u names step %u again",
				 NOT_PERMUTATION, i, s);
			return fault_msg;
		}
		seen[s / 64] |= UINT64_C(1) << (s % 64);
	}
	return NULL;
}

#define META	"plan: metadata table"

/*
 * With a metadata table, @used must be the size of the plan of @bytes
 * (plan_bytes()) and the table: checked with the head, @used being one
 * of its fields, as the kernel does.  The table's count is read only once
 * its head is known to lie within @used, itself within the area.
 */
static const char *plan_meta_size(const unsigned char *area, size_t bytes, uint32_t used)
{
	size_t at = meta_at(bytes);
	const struct pbitmap_plan_meta *m = (const void *)(area + at);
	uint32_t nr;

	if (at + sizeof(*m) > used)
		return "plan: size does not match its tables";
	nr = le32toh(m->nr);
	if (used != at + sizeof(*m) + (uint64_t)nr * sizeof(struct pbitmap_plan_meta_range)) {
		snprintf(fault_msg, sizeof(fault_msg), "plan: size does not match its tables (a "
			 "metadata table of %u ranges)", nr);
		return fault_msg;
	}
	return NULL;
}

/* A metadata range's fault, or NULL; @prev_end is the end of the one before. */
static const char *plan_meta_range(const struct pbitmap_plan_meta_range *r, uint32_t i,
				   uint64_t prev_end)
{
	uint64_t start = le64toh(r->start);
	uint32_t nr = le32toh(r->nr);

	if (!nr)
		snprintf(fault_msg, sizeof(fault_msg), "%s: range %u is empty", META, i);
	else if (r->age > PBITMAP_PLAN_META_KEEP)
		snprintf(fault_msg, sizeof(fault_msg), "%s: range %u: age %u (at most %u)", META, i,
			 r->age, PBITMAP_PLAN_META_KEEP);
	else if (!all_zero(r->reserved, sizeof(r->reserved)))
		snprintf(fault_msg, sizeof(fault_msg), "%s: range %u: reserved bytes not zero",
			 META, i);
	else if (i && start < prev_end)
		snprintf(fault_msg, sizeof(fault_msg), "%s: range %u starts before range %u ends "
			 "(not ascending and disjoint)", META, i, i - 1);
	/* nr < 2^32 < PBITMAP_PLAN_META_END: neither side wraps */
	else if (start > PBITMAP_PLAN_META_END - nr)
		snprintf(fault_msg, sizeof(fault_msg), "%s: range %u ends past unit 2^40", META, i);
	else
		return NULL;
	return fault_msg;
}

/*
 * The metadata table (docs/FORMAT.md, "Start-up plan"), checked after
 * everything else, as the kernel checks it and in its order: the zeros
 * before it, its head, each range, the total.  Its size was checked with
 * the head (plan_meta_size()).  @bytes: the plan without it.
 */
static const char *plan_meta(const unsigned char *area, size_t bytes)
{
	size_t at = meta_at(bytes);
	const struct pbitmap_plan_meta *m = (const void *)(area + at);
	const struct pbitmap_plan_meta_range *r = (const void *)(m + 1);
	uint32_t nr = le32toh(m->nr);
	uint64_t prev_end = 0, units = 0;

	if (!all_zero(area + bytes, at - bytes))
		return META ": the padding before it is not zero";
	if (m->reserved)
		return META ": reserved fields not zero";
	if (all_zero(m->uuid, sizeof(m->uuid)))
		return META ": the filesystem UUID is all zero";
	if (!nr || nr > PBITMAP_PLAN_META_MAX_RANGES) {
		snprintf(fault_msg, sizeof(fault_msg), "%s: %u ranges (1 to %u)", META, nr,
			 PBITMAP_PLAN_META_MAX_RANGES);
		return fault_msg;
	}
	for (uint32_t i = 0; i < nr; i++) {
		const char *fault = plan_meta_range(&r[i], i, prev_end);

		if (fault)
			return fault;
		prev_end = le64toh(r[i].start) + le32toh(r[i].nr);
		units += le32toh(r[i].nr);
	}
	if (units > PBITMAP_PLAN_META_MAX_UNITS) {
		snprintf(fault_msg, sizeof(fault_msg), "%s: %" PRIu64 " units (at most %u)", META,
			 units, PBITMAP_PLAN_META_MAX_UNITS);
		return fault_msg;
	}
	return NULL;
}

bool pb_plan_empty(const unsigned char *area, size_t size)
{
	return size < sizeof(struct pbitmap_plan) ||
	       !((const struct pbitmap_plan *)area)->magic;
}

const char *pb_plan_check(const unsigned char *area, size_t size)
{
	const struct pbitmap_plan *p = (const void *)area;
	const struct pbitmap_plan_file *files;
	const struct pbitmap_plan_step *steps;
	const pbitmap_plan_order_t *order;
	const char *names, *fault;
	uint32_t nr_files, nr_steps, names_size, used;
	bool has_order, has_meta;
	size_t bytes;

	if (!size)
		return NULL;
	if (size < sizeof(*p))
		return "plan area smaller than a plan";
	if (!p->magic)
		return all_zero(area, size) ? NULL : "empty plan area not zero";
	if (le32toh(p->magic) != PBITMAP_PLAN_MAGIC)
		return "bad plan magic";
	if (le16toh(p->flags) & ~PBITMAP_PLAN_F_ALL) {
		snprintf(fault_msg, sizeof(fault_msg), "plan: unknown flags %#x",
			 le16toh(p->flags) & ~PBITMAP_PLAN_F_ALL);
		return fault_msg;
	}
	if (!all_zero((const void *)p->reserved, sizeof(p->reserved)))
		return "plan: reserved fields not zero";
	has_order = le16toh(p->flags) & PBITMAP_PLAN_F_ORDER;
	has_meta = le16toh(p->flags) & PBITMAP_PLAN_F_META;
	nr_files = le16toh(p->nr_files);
	nr_steps = le32toh(p->nr_steps);
	names_size = le32toh(p->names_size);
	used = le32toh(p->used);
	if (!nr_files || nr_files > PBITMAP_PLAN_MAX_FILES)
		return "plan: number of files out of range";
	bytes = plan_bytes(nr_files, nr_steps, names_size, has_order);
	if (used > size || (!has_meta && used != bytes))
		return "plan: size does not match its tables";
	if (has_meta && (fault = plan_meta_size(area, bytes, used)))
		return fault;
	if (!all_zero(area + used, size - used))
		return "plan: bytes past its end not zero";
	files = (const void *)(p + 1);
	steps = (const void *)(files + nr_files);
	order = (const void *)(steps + nr_steps);
	names = (const char *)(order + (has_order ? nr_steps : 0));
	if (!names_size || names[names_size - 1])
		return "plan: names not terminated";
	for (uint32_t i = 0; i < nr_files; i++) {
		uint32_t at = le32toh(files[i].name);

		if (files[i].reserved)
			return "plan: reserved fields not zero";
		if (at >= names_size || names[at] != '/')
			return "plan: a file name is not an absolute path";
		if (strlen(names + at) >= PB_PLAN_PATH_MAX)
			return "plan: a file name is too long";
	}
	for (uint32_t i = 0; i < nr_steps; i++) {
		uint32_t file = le16toh(steps[i].file);
		uint64_t start = le32toh(steps[i].start), nr = le32toh(steps[i].nr);

		if (steps[i].reserved)
			return "plan: reserved fields not zero";
		if (file >= nr_files)
			return "plan: a range names no file";
		if (!nr || start + nr > (le64toh(files[file].size) + UNIT - 1) / UNIT)
			return "plan: a range is empty or past its file's end";
	}
	fault = plan_canonical(files, nr_files, steps, nr_steps);
	if (!fault && has_order)
		fault = plan_order(order, nr_steps);
	if (!fault && has_meta)
		fault = plan_meta(area, bytes);
	return fault;
}

void pb_plan_carry(struct pb_record *dst, const struct pb_record *src)
{
	size_t dsize, ssize;
	unsigned char *to = pb_plan_area(dst, &dsize);
	const unsigned char *from = pb_plan_area(src, &ssize);

	/* @used covers the order and metadata tables: they come along */
	if (!dsize || pb_plan_empty(from, ssize) || pb_plan_check(from, ssize))
		return;
	if (le32toh(((const struct pbitmap_plan *)from)->used) <= dsize) {
		memset(to, 0, dsize);
		memcpy(to, from, le32toh(((const struct pbitmap_plan *)from)->used));
	}
}

int pb_plan_build(unsigned char *area, size_t size, const struct pb_plan_file_in *in,
		  size_t nr, size_t *need)
{
	struct pbitmap_plan *p = (void *)area;
	struct pbitmap_plan_file *files;
	struct pbitmap_plan_step *steps;
	size_t nr_steps = 0, names = 0, k = 0, at = 0;
	char *name;

	for (size_t i = 0; i < nr; i++) {
		nr_steps += in[i].nr_ranges;
		names += strlen(in[i].path) + 1;
	}
	*need = plan_bytes(nr, nr_steps, names, false);
	if (!nr || nr > PBITMAP_PLAN_MAX_FILES || nr_steps > UINT32_MAX ||
	    names > UINT32_MAX) {
		errno = E2BIG;
		return PB_FAIL;
	}
	if (*need > size) {
		errno = ENOSPC;
		return PB_FAIL;
	}
	memset(area, 0, size);
	p->magic = htole32(PBITMAP_PLAN_MAGIC);
	p->used = htole32((uint32_t)*need);
	p->nr_files = htole16((uint16_t)nr);
	p->nr_steps = htole32((uint32_t)nr_steps);
	p->names_size = htole32((uint32_t)names);
	files = (void *)(p + 1);
	steps = (void *)(files + nr);
	name = (char *)(steps + nr_steps);
	for (size_t i = 0; i < nr; i++) {
		size_t len = strlen(in[i].path) + 1;

		files[i].ino = htole64(in[i].ino);
		files[i].size = htole64(in[i].size);
		files[i].dev = htole32(in[i].dev);
		files[i].generation = htole32(in[i].generation);
		files[i].name = htole32((uint32_t)at);
		memcpy(name + at, in[i].path, len);
		at += len;
	}
	/*
	 * In the order given, which is the order of first touch: no order
	 * table, the files' own order is the one to read them in.
	 */
	for (size_t i = 0; i < nr; i++)
		for (size_t j = 0; j < in[i].nr_ranges; j++, k++) {
			steps[k].start = htole32(in[i].ranges[j].start);
			steps[k].nr = htole32(in[i].ranges[j].nr);
			steps[k].file = htole16((uint16_t)i);
		}
	return 0;
}

int pb_plan_read(const unsigned char *area, size_t size, struct pb_plan_view *v)
{
	const struct pbitmap_plan *p = (const void *)area;

	memset(v, 0, sizeof(*v));
	if (!size || pb_plan_empty(area, size))
		return 0;
	v->nr_files = le16toh(p->nr_files);
	v->nr_steps = le32toh(p->nr_steps);
	v->used = le32toh(p->used);
	v->files = (const void *)(p + 1);
	v->steps = (const void *)(v->files + v->nr_files);
	if (le16toh(p->flags) & PBITMAP_PLAN_F_ORDER) {
		v->order = (const void *)(v->steps + v->nr_steps);
		v->names = (const char *)(v->order + v->nr_steps);
	} else {
		v->names = (const char *)(v->steps + v->nr_steps);
	}
	/* last, after the names: no offset above depends on it */
	if (le16toh(p->flags) & PBITMAP_PLAN_F_META) {
		size_t at = meta_at((size_t)(v->names - (const char *)area) +
				    le32toh(p->names_size));

		v->meta = (const void *)(area + at);
		v->meta_ranges = (const void *)(v->meta + 1);
		v->nr_meta = le32toh(v->meta->nr);
	}
	return 1;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct pb_plan_run *x = a, *y = b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int pb_plan_runs(const struct pb_plan_view *v, uint64_t gap, struct pb_plan_run **runs,
		 uint32_t *nr_runs)
{
	struct pb_plan_run *r;
	uint32_t *pos = NULL, n = 0;

	*runs = NULL;
	*nr_runs = 0;
	if (!v->nr_steps)
		return 0;
	r = malloc(v->nr_steps * sizeof(*r));
	if (v->order)
		pos = malloc(v->nr_steps * sizeof(*pos));
	if (!r || (v->order && !pos)) {
		free(r);
		free(pos);
		return PB_FAIL;
	}
	/* each step's place in the table: checked, the table is a permutation */
	for (uint32_t i = 0; pos && i < v->nr_steps; i++)
		pos[le16toh(v->order[i])] = i;
	for (uint32_t s = 0; s < v->nr_steps; s++) {
		uint32_t file = le16toh(v->steps[s].file), rank = pos ? pos[s] : s;
		uint64_t end = ((uint64_t)le32toh(v->steps[s].start) + le32toh(v->steps[s].nr))
			       << PBITMAP_PLAN_UNIT_SHIFT;

		r[n].first = s;
		while (s + 1 < v->nr_steps && le16toh(v->steps[s + 1].file) == file &&
		       pb_joins(end, (uint64_t)le32toh(v->steps[s + 1].start) << PBITMAP_PLAN_UNIT_SHIFT,
				gap)) {
			s++;
			end = ((uint64_t)le32toh(v->steps[s].start) + le32toh(v->steps[s].nr))
			      << PBITMAP_PLAN_UNIT_SHIFT;
			if (pos && pos[s] < rank)
				rank = pos[s];
		}
		r[n].last = s;
		r[n].rank = rank;
		r[n].file = file;
		r[n].offset = (uint64_t)le32toh(v->steps[r[n].first].start) << PBITMAP_PLAN_UNIT_SHIFT;
		r[n].length = end - r[n].offset;
		n++;
	}
	if (pos)	/* ranks are distinct: no two runs compare equal */
		qsort(r, n, sizeof(*r), cmp_rank);
	free(pos);
	*runs = r;
	*nr_runs = n;
	return 0;
}
