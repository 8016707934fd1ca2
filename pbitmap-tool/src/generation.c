// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A learned generation: pages a program was seen to use, made the newest
 * plane of a file's record and saved.  `pbitmap record` (cmd-record.c)
 * and pbitmapd's learning share it, so both write what the kernel would,
 * where the kernel would: an ELF file's record slot that is not current,
 * in place (pb_save_learned(), elfstore.c), so the file keeps its inode
 * and the start-up plans naming it stay valid; a data file's attribute.
 * Where that is not safe from user space (a program, which a write-open
 * would keep from being executed; set-ID bits or file capabilities, which
 * a write removes; a missing marker; a file being executed), the file is
 * written as every other change is, a copy renamed over it (replace.c).
 */
#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "pbitmap.h"

/* Pages (of @page_size bytes) -> granules of @f's record; offsets past the content are not ours. */
static void build_plane(const struct pb_file *f, const struct pb_pageset *pages,
			uint64_t page_size, unsigned char *plane)
{
	uint64_t nr = pb_nr_pages(&f->rec), content = pb_content_size(f);
	unsigned int shift = pb_page_shift(&f->rec);
	uint64_t p;

	for (uint64_t from = 0; pb_pageset_next(pages, from, &p); from = p + 1) {
		uint64_t off = p * page_size, g, last;

		if (off >= content)
			return;
		last = (off + page_size - 1) >> shift;
		for (g = off >> shift; g <= last && g < nr; g++)
			pb_set_bit(plane, g);
	}
}

int pb_learn_shift_in(struct pb_file *f, const struct pb_pageset *pages, uint64_t page_size,
		      uint64_t *marked)
{
	unsigned char *plane = calloc(1, le32toh(pb_hdr(&f->rec)->plane_size));

	if (!plane)
		return pb_error_errno(f->path, "malloc");
	build_plane(f, pages, page_size, plane);
	*marked = pb_count_bits(plane, pb_nr_pages(&f->rec));
	pb_shift_in(&f->rec, plane, time(NULL));
	free(plane);
	return 0;
}

int pb_learn_generation(struct pb_file *f, const struct pb_pageset *pages, uint64_t page_size,
			uint64_t *marked)
{
	int ret = pb_learn_shift_in(f, pages, page_size, marked);

	return ret ? ret : pb_save_learned(f);
}
