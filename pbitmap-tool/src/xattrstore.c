// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The pbitmap record of a mapped data file, in the user.pbitmap extended
 * attribute: struct pbitmap_xattr, then the record as one zstd frame.
 *
 * An xattr value is small (ext4 keeps all of a file's attributes in the
 * inode and one block: about 4 KiB, shared with ACLs and labels), so the
 * granule is chosen at stamping time such that even an incompressible
 * record fits.  The kernel can then always write a learned record back,
 * because the record never changes size after stamping.
 */
#include <endian.h>
#include <errno.h>
#include <linux/limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <zstd.h>

#include "pbitmap.h"

/* Room the record may take compressed within @xattr_max, worst case. */
static bool fits(size_t record_size, size_t xattr_max)
{
	return sizeof(struct pbitmap_xattr) + ZSTD_compressBound(record_size) <= xattr_max;
}

unsigned int pb_xattr_page_shift(uint64_t content_size, unsigned int nr_planes,
				 size_t xattr_max)
{
	for (unsigned int shift = PBITMAP_MIN_PAGE_SHIFT;
	     shift <= PBITMAP_MAX_PAGE_SHIFT; shift++) {
		size_t size = pb_record_size(content_size, shift, nr_planes);

		if (size && fits(size, xattr_max))
			return shift;
	}
	return 0;
}

const char *pb_xattr_decode(const void *val, size_t len, struct pb_record *r)
{
	const struct pbitmap_xattr *x = val;
	unsigned long long frame;
	size_t size, got;
	const char *why;
	unsigned char *buf;

	r->buf = NULL;
	r->size = 0;
	if (len < sizeof(*x))
		return "attribute shorter than its header";
	if (pb_marker_is_one(val, len))
		return "user.pbitmap holds the marker of a stamped ELF file (PBEM), but this is "
		       "not an ELF file: the kernel will not prefetch it ('pbitmap add' gives it "
		       "a bitmap of its own, 'pbitmap strip' removes the attribute)";
	if (le32toh(x->magic) != PBITMAP_XATTR_MAGIC)
		return "bad attribute magic";
	size = le32toh(x->record_size);
	if (size < sizeof(struct pbitmap_header) || size > PBITMAP_MAX_RECORD_SIZE)
		return "record size out of range";
	frame = ZSTD_getFrameContentSize((const char *)val + sizeof(*x), len - sizeof(*x));
	if (frame != size)
		return "compressed frame does not hold the announced record size";
	buf = malloc(size);
	if (!buf)
		return "out of memory";
	got = ZSTD_decompress(buf, size, (const char *)val + sizeof(*x), len - sizeof(*x));
	if (ZSTD_isError(got) || got != size) {
		free(buf);
		return "corrupt compressed record";
	}
	why = pb_record_check(buf, size);
	if (!why && !(le32toh(((struct pbitmap_header *)buf)->flags) & PBITMAP_F_XATTR))
		why = "record in an attribute lacks the xattr flag";
	if (why) {
		free(buf);
		return why;
	}
	r->buf = buf;
	r->size = size;
	return NULL;
}

/*
 * One fgetxattr() into a buffer of the largest size an attribute can have:
 * asking for the size first and then for the value races with a writer
 * whose new value is longer (ERANGE, a false error in verify).
 */
int pb_xattr_load(struct pb_file *f)
{
	unsigned char *val = malloc(XATTR_SIZE_MAX);
	ssize_t len;
	const char *why;

	if (!val)
		return pb_error_errno(f->path, "malloc");
	len = fgetxattr(f->fd, PBITMAP_XATTR_NAME, val, XATTR_SIZE_MAX);
	if (len < 0) {
		free(val);
		if (errno == ENODATA || errno == ENOTSUP)
			return 0;
		return pb_error_errno(f->path, "reading the " PBITMAP_XATTR_NAME " attribute");
	}
	why = pb_xattr_decode(val, (size_t)len, &f->rec);
	free(val);
	if (why) {
		f->damage = why;
		return 0;
	}
	f->has_record = true;
	return 0;
}

static int xattr_error(struct pb_file *f, int err)
{
	if (err == ENOTSUP)
		return pb_error(f->path, "the filesystem does not support user extended attributes "
				"(needed to store the bitmap of a non-ELF file)");
	if (err == E2BIG || err == ENOSPC || err == ERANGE)
		return pb_error(f->path, "the bitmap does not fit in the file's extended attributes "
				"(try a smaller --xattr-max or fewer --generations)");
	errno = err;
	return pb_error_errno(f->path, "writing the " PBITMAP_XATTR_NAME " attribute");
}

static int write_value(struct pb_file *f, const struct pb_record *r, size_t xattr_max,
		       int xflags)
{
	size_t bound = ZSTD_compressBound(r->size);
	struct pbitmap_xattr *x = malloc(sizeof(*x) + bound);
	size_t n;
	int ret = 0;

	if (!x)
		return pb_error_errno(f->path, "malloc");
	x->magic = htole32(PBITMAP_XATTR_MAGIC);
	x->record_size = htole32((uint32_t)r->size);
	n = ZSTD_compress(x + 1, bound, r->buf, r->size, 19);
	if (ZSTD_isError(n))
		ret = pb_error(f->path, "zstd: %s", ZSTD_getErrorName(n));
	else if (sizeof(*x) + n > xattr_max)
		ret = pb_error(f->path, "compressed bitmap (%zu bytes) exceeds %zu bytes",
			       sizeof(*x) + n, xattr_max);
	else if (fsetxattr(f->fd, PBITMAP_XATTR_NAME, x, sizeof(*x) + n, xflags))
		ret = xattr_error(f, errno);
	else
		pb_fault_point("xattr-written");
	free(x);
	return ret;
}

int pb_xattr_stamp(struct pb_file *f, const struct pb_params *p)
{
	uint64_t size = (uint64_t)f->st.st_size;
	size_t xattr_max = p->xattr_max ? p->xattr_max : PB_XATTR_MAX_DEFAULT;
	unsigned int shift = p->page_shift;
	struct pb_record r;

	if (size == 0)
		return pb_error(f->path, "empty file: there are no pages to prefetch");
	if (p->plan_size)
		return pb_error(f->path, "not an ELF file: only an executable carries a start-up "
				"plan (--plan-size)");
	if (!shift)
		shift = pb_xattr_page_shift(size, p->nr_planes, xattr_max);
	if (!shift)
		return pb_error(f->path, "no granule makes %u generations fit in %zu bytes",
				p->nr_planes, xattr_max);
	if (pb_record_init(&r, size, shift, p->nr_planes, p->threshold,
			   p->flags | PBITMAP_F_XATTR))
		return pb_error_errno(f->path, "cannot make a record of this geometry");
	if (p->carry)
		pb_record_carry(&r, p->carry);
	if (!fits(r.size, xattr_max)) {
		pb_record_free(&r);
		return pb_error(f->path, "a granule of 2^%u bytes gives a %zu-byte record, "
				"too large for a %zu-byte attribute", shift, r.size, xattr_max);
	}
	if (write_value(f, &r, xattr_max, 0)) {
		pb_record_free(&r);
		return PB_FAIL;
	}
	pb_record_free(&f->rec);
	f->rec = r;
	f->has_record = true;
	f->damage = NULL;
	return 0;
}

int pb_xattr_unstamp(struct pb_file *f)
{
	if (fremovexattr(f->fd, PBITMAP_XATTR_NAME)) {
		if (errno == ENODATA || errno == ENOTSUP)
			return PB_NONE;
		return pb_error_errno(f->path, "removing the " PBITMAP_XATTR_NAME " attribute");
	}
	pb_fault_point("xattr-removed");
	return 0;
}

int pb_xattr_save(struct pb_file *f)
{
	if (!f->has_record)
		return pb_error(f->path, "no bitmap to update");
	pb_record_seal(&f->rec);
	/* Whatever limit it was stamped for, the record has not grown since. */
	return write_value(f, &f->rec, SIZE_MAX, XATTR_REPLACE);
}
