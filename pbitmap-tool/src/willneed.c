// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Readahead of a record's marked ranges: what `pbitmap prefetch`, `run`,
 * pbitmap-run and the LD_AUDIT module (pbitmap-audit.so) all ask the kernel
 * for.  posix_fadvise(POSIX_FADV_WILLNEED) starts asynchronous reads into
 * the page cache and returns; nothing here waits for the I/O.  No messages
 * and no state: the audit module runs inside other programs.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "pbitmap.h"

int pb_willneed(int fd, const struct pb_record *r, uint64_t content, uint64_t gap,
		uint64_t limit, uint64_t *extents, uint64_t *bytes)
{
	uint64_t nr = pb_nr_pages(r), first, count, n_ext = 0, n_bytes = 0;
	unsigned int shift = pb_page_shift(r);
	unsigned char *plane;
	int err = 0;

	plane = malloc(le32toh(pb_hdr(r)->plane_size));
	if (!plane)
		return ENOMEM;
	pb_effective(r, plane);
	for (uint64_t n = 0; pb_next_run(plane, nr, n, &first, &count); n = first + count) {
		uint64_t off = first << shift, end = (first + count) << shift;
		uint64_t next, next_count;

		while (pb_next_run(plane, nr, first + count, &next, &next_count) &&
		       (next << shift) - end < gap) {
			count = next + next_count - first;
			end = (first + count) << shift;
		}
		if (end > content)
			end = content;	/* the last granule may be partial */
		if (off >= end)
			break;
		if (limit && n_bytes + (end - off) > limit)
			break;	/* the budget: the file's first ranges, which start-up needs first */
		err = posix_fadvise(fd, (off_t)off, (off_t)(end - off), POSIX_FADV_WILLNEED);
		if (err)
			break;
		n_ext++;
		n_bytes += end - off;
	}
	free(plane);
	if (extents)
		*extents = n_ext;
	if (bytes)
		*bytes = n_bytes;
	return err;
}
