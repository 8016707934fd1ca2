// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap set, pbitmap clear, pbitmap merge: edit the generations of a
 * bitmap by hand, or OR those of other files into it.
 */
#include <endian.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pbitmap.h"
#include "cli.h"
#include "profile.h"

struct edit_args {
	struct pb_ranges ranges;
	bool set;
	bool all;
	int plane;			/* age, -1 for all planes */
};

static int edit_one(const char *path, unsigned int flags, void *arg)
{
	struct edit_args *a = arg;
	struct pb_file f;
	uint64_t pages;
	unsigned int shift, planes;
	int ret = pb_open_record(&f, path, flags | PB_OPEN_WRITE);

	if (ret)
		return ret;
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
		for (size_t i = 0; i < a->ranges.n; i++) {
			const struct pb_range *r = &a->ranges.v[i];
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

static int edit(int argc, char **argv, bool set)
{
	static const struct option opts[] = {
		{ "pages", required_argument, NULL, 'p' },
		{ "ranges", required_argument, NULL, 'r' },
		{ "plane", required_argument, NULL, 'P' },
		{ "all", no_argument, NULL, 'a' },
		{ "dereference", no_argument, NULL, 'L' },
		{ "break-links", no_argument, NULL, 'B' },
		{ 0 }
	};
	struct edit_args a = { .set = set, .plane = -1 };
	unsigned int flags = 0;
	unsigned long long v;
	int c, ret;

	while ((c = pb_getopt(argc, argv, "L", opts)) != -1) {
		switch (c) {
		case 'p':
		case 'r':
			if (!pb_parse_ranges(&a.ranges, optarg, c == 'r')) {
				free(a.ranges.v);
				return pb_usage_error(c == 'p' ?
					"--pages: expected N,N-M,... (page numbers)" :
					"--ranges: expected START-END,START+LEN,... (bytes, K/M/G suffixes)");
			}
			break;
		case 'P':
			if (!pb_parse_uint(optarg, PBITMAP_MAX_PLANES - 1, &v)) {
				free(a.ranges.v);
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
		case 'B':
			flags |= PB_OPEN_BREAK_LINKS;
			break;
		default:
			free(a.ranges.v);
			return pb_option_exit(c);
		}
	}
	if (a.all && set) {
		free(a.ranges.v);
		return pb_usage_error("set: --all is only for clear");
	}
	if (!a.ranges.n && !a.all)
		return pb_usage_error("%s: give --pages or --ranges%s", argv[0], set ? "" : " or --all");
	ret = pb_for_each_file(argc, argv, false, flags, edit_one, &a);
	free(a.ranges.v);
	return ret;
}

/* ---- merge ------------------------------------------------------------------- */

/*
 * merge DEST SRC...: each SRC is a file with a bitmap of the same content
 * and granule as DEST's, or a portable profile (its entry for DEST, carried
 * as `import` carries it).  Without --min, every SRC's generations are
 * ORed into DEST's, as they always were.  With --min K, DEST's generations
 * are replaced by a vote: a granule is marked in generation AGE when at
 * least K of the N sources mark it there (K = 1: the union of the sources;
 * K = N: what all of them agree on).  That is how a fleet's profiles
 * combine: a page that one machine's odd run touched does not ship.
 */

static bool same_geometry(const struct pb_record *a, const struct pb_record *b)
{
	const struct pbitmap_header *x = pb_hdr(a), *y = pb_hdr(b);

	return x->page_shift == y->page_shift && x->nr_pages == y->nr_pages &&
	       x->content_size == y->content_size;
}

struct votes {
	uint16_t *count[PBITMAP_MAX_PLANES];	/* per granule, NULL without --min */
	unsigned long min;
};

/* Count (with --min) or OR (without) one source's plane into DEST's generation @age. */
static void take_plane(struct pb_file *dest, struct votes *v, unsigned int age,
		       const unsigned char *plane)
{
	uint64_t pages = pb_nr_pages(&dest->rec);

	if (!v->min) {
		unsigned char *d = pb_plane(&dest->rec, age);

		for (uint32_t b = 0; b < le32toh(pb_hdr(&dest->rec)->plane_size); b++)
			d[b] |= plane[b];
		return;
	}
	for (uint64_t n = 0; n < pages; n++)
		if (pb_test_bit(plane, n) && v->count[age][n] < UINT16_MAX)
			v->count[age][n]++;
}

/* A stamped file as a source.  0 or PB_FAIL/PB_SKIPPED (reported). */
static int take_file(struct pb_file *dest, struct votes *v, struct pb_file *src)
{
	unsigned int gens;

	if (!src->has_record)
		return pb_error_no_record(src);
	if (!same_geometry(&dest->rec, &src->rec))
		return pb_error(src->path, "covers different content or uses another granule "
				"than %s", dest->path);
	gens = pb_hdr(&src->rec)->nr_planes;
	if (gens > pb_hdr(&dest->rec)->nr_planes)
		gens = pb_hdr(&dest->rec)->nr_planes;
	for (unsigned int age = 0; age < gens; age++)
		take_plane(dest, v, age, pb_plane(&src->rec, age));
	return 0;
}

/* A profile as a source: its entry for DEST, in DEST's granules. */
static int take_profile(struct pb_file *dest, struct pb_target *t, struct votes *v,
			const char *name)
{
	struct pb_byte_ranges gens[PBITMAP_MAX_PLANES] = { 0 };
	uint32_t plane_size = le32toh(pb_hdr(&dest->rec)->plane_size);
	unsigned char *plane = calloc(1, plane_size ? plane_size : 1);
	const struct pb_profile_entry *e;
	struct pb_carry_stats st;
	struct pb_profile p;
	bool exact;
	int ret;

	if (!plane)
		return pb_error(name, "out of memory");
	bool loaded;

	ret = pb_profile_load(name, &p);
	loaded = !ret;
	if (!ret)
		ret = pb_profile_apply(&p, name, t, gens, &e, &st, &exact);
	for (unsigned int age = 0; !ret && age < e->nr_gens &&
	     age < pb_hdr(&dest->rec)->nr_planes; age++) {
		memset(plane, 0, plane_size);
		pb_record_mark(&dest->rec, plane, &gens[age]);
		take_plane(dest, v, age, plane);
	}
	if (!ret && pb_verbose)
		pb_note(name, "%s: %s", dest->path, exact ? "same content" : "carried by anchors");
	if (loaded)
		pb_profile_free(&p);
	for (unsigned int i = 0; i < PBITMAP_MAX_PLANES; i++)
		pb_byte_ranges_free(&gens[i]);
	free(plane);
	return ret;
}

/* Is @path a profile (by its first bytes)?  False if it cannot be read. */
static bool is_profile(const char *path)
{
	char head[32];
	size_t n = 0;
	FILE *fp = fopen(path, "re");

	if (fp) {
		n = fread(head, 1, sizeof(head), fp);
		fclose(fp);
	}
	return pb_profile_is_one(head, n);
}

int pb_cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "min", required_argument, NULL, 'k' },
		{ 0 }
	};
	struct votes v = { 0 };
	struct pb_target t = { 0 };
	struct pb_file dest;
	struct pb_tally tally = { 0 };
	unsigned long long k;
	unsigned int planes;
	int c, ret, nr_src;

	while ((c = pb_getopt(argc, argv, "k:", opts)) != -1) {
		if (c != 'k')
			return pb_option_exit(c);
		if (!pb_parse_uint(optarg, 65535, &k) || !k)
			return pb_usage_error("--min: expected a count of sources, 1 or more");
		v.min = (unsigned long)k;
	}
	nr_src = argc - optind - 1;
	if (nr_src < 1)
		return pb_usage_error("merge: DEST and at least one SRC expected");
	if (v.min > (unsigned long)nr_src)
		return pb_usage_error("--min %lu: only %d sources given", v.min, nr_src);
	ret = pb_open_record(&dest, argv[optind], PB_OPEN_WRITE);
	if (ret)
		return ret == PB_SKIPPED ? PB_EXIT_SKIPPED : PB_EXIT_FAIL;
	planes = pb_hdr(&dest.rec)->nr_planes;
	for (unsigned int age = 0; v.min && age < planes; age++) {
		v.count[age] = calloc(pb_nr_pages(&dest.rec) + 1, sizeof(uint16_t));
		if (!v.count[age]) {
			tally.failed++;
			pb_error(dest.path, "out of memory");
			goto out;
		}
	}
	for (int i = optind + 1; i < argc; i++) {
		struct pb_file src;

		if (is_profile(argv[i])) {
			if (!t.f && pb_target_load(&t, &dest)) {
				tally.failed++;
				break;
			}
			pb_tally_add(&tally, take_profile(&dest, &t, &v, argv[i]));
			continue;
		}
		if (pb_open(&src, argv[i], PB_OPEN_FOLLOW)) {
			tally.failed++;
			continue;
		}
		pb_tally_add(&tally, take_file(&dest, &v, &src));
		pb_close(&src);
	}
	for (unsigned int age = 0; v.min && age < planes; age++) {
		unsigned char *d = pb_plane(&dest.rec, age);

		memset(d, 0, le32toh(pb_hdr(&dest.rec)->plane_size));
		for (uint64_t n = 0; n < pb_nr_pages(&dest.rec); n++)
			if (v.count[age][n] >= v.min)
				pb_set_bit(d, n);
	}
	/* A vote of fewer sources than asked for is not the vote asked for. */
	if (!tally.failed && !tally.skipped)
		pb_tally_add(&tally, pb_save(&dest));
	else
		pb_error(dest.path, "not changed: a source could not be used");
out:
	for (unsigned int age = 0; age < PBITMAP_MAX_PLANES; age++)
		free(v.count[age]);
	if (t.f)
		pb_target_free(&t);
	pb_close(&dest);
	return pb_tally_exit(&tally);
}

int pb_cmd_set(int argc, char **argv)
{
	return edit(argc, argv, true);
}

int pb_cmd_clear(int argc, char **argv)
{
	return edit(argc, argv, false);
}
