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

static bool same_geometry(const struct pb_record *a, const struct pb_record *b)
{
	const struct pbitmap_header *x = pb_hdr(a), *y = pb_hdr(b);

	return x->page_shift == y->page_shift && x->nr_pages == y->nr_pages &&
	       x->content_size == y->content_size;
}

int pb_cmd_merge(int argc, char **argv)
{
	struct pb_file dest;
	struct pb_tally t = { 0 };
	int c, ret;

	if ((c = pb_getopt(argc, argv, "", NULL)) != -1)
		return pb_option_exit(c);
	if (argc - optind < 2)
		return pb_usage_error("merge: DEST and at least one SRC expected");
	ret = pb_open_record(&dest, argv[optind], PB_OPEN_WRITE);
	if (ret)
		return ret == PB_SKIPPED ? PB_EXIT_SKIPPED : PB_EXIT_FAIL;
	for (int i = optind + 1; i < argc; i++) {
		struct pb_file src;
		unsigned int gens;

		if (pb_open(&src, argv[i], PB_OPEN_FOLLOW)) {
			t.failed++;
			continue;
		}
		if (!src.has_record) {
			pb_tally_add(&t, pb_error_no_record(&src));
		} else if (!same_geometry(&dest.rec, &src.rec)) {
			pb_tally_add(&t, pb_error(argv[i], "covers different content or uses another "
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
		pb_tally_add(&t, pb_save(&dest));
	pb_close(&dest);
	return pb_tally_exit(&t);
}

int pb_cmd_set(int argc, char **argv)
{
	return edit(argc, argv, true);
}

int pb_cmd_clear(int argc, char **argv)
{
	return edit(argc, argv, false);
}
