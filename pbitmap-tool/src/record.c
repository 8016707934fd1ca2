// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The pbitmap record in memory: geometry, validation, checksum and the
 * ring of generations.  Nothing here touches files, so the fuzz target and
 * every storage backend share exactly one parser.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pbitmap.h"

uint32_t pb_plane_size(uint64_t nr_pages)
{
	return (uint32_t)(((nr_pages + 63) / 64) * PBITMAP_PLANE_ALIGN);
}

static uint64_t nr_granules(uint64_t content_size, unsigned int page_shift)
{
	return (content_size >> page_shift) +
	       !!(content_size & ((UINT64_C(1) << page_shift) - 1));
}

size_t pb_record_size(uint64_t content_size, unsigned int page_shift,
		      unsigned int nr_planes)
{
	uint64_t pages = nr_granules(content_size, page_shift);
	uint64_t plane = ((pages + 63) / 64) * PBITMAP_PLANE_ALIGN;
	uint64_t size;

	if (plane > PBITMAP_MAX_RECORD_SIZE)
		return 0;
	size = sizeof(struct pbitmap_header) + plane * nr_planes;
	return size > PBITMAP_MAX_RECORD_SIZE ? 0 : (size_t)size;
}

const char *pb_learn_policy(uint32_t flags)
{
	if (flags & PBITMAP_F_NO_LEARN)
		return "never";
	return flags & PBITMAP_F_LEARN_EVERY ? "every" : "owner";
}

uint64_t pb_section_size(size_t record_size)
{
	return (record_size + PBITMAP_SLOT_ALIGN - 1) / PBITMAP_SLOT_ALIGN *
	       PBITMAP_SLOT_ALIGN + record_size;
}

/*
 * A section of S bytes holds slots of r bytes at a stride of k aligned
 * units with r in ((k - 1) * align, k * align]: S = k * align + r lies in
 * ((2k - 1) * align, 2k * align], so k, and with it r, follow from S alone
 * (and the sizes between those ranges hold no two slots).
 */
size_t pb_slot_size(uint64_t section_size, size_t *stride)
{
	const uint64_t align = PBITMAP_SLOT_ALIGN;
	uint64_t k = (section_size + 2 * align - 1) / (2 * align);
	uint64_t r;

	if (section_size <= align || section_size > 2 * (uint64_t)PBITMAP_MAX_RECORD_SIZE)
		return 0;
	r = section_size - k * align;
	if (r <= (k - 1) * align || r > k * align)
		return 0;
	*stride = (size_t)(k * align);
	return (size_t)r;
}

int pb_slot_current(const unsigned char *section, uint64_t section_size,
		    const char **why)
{
	const char *bad[PBITMAP_NR_SLOTS];
	uint64_t runs[PBITMAP_NR_SLOTS];
	size_t stride, size = pb_slot_size(section_size, &stride);
	int cur = -1;

	if (size < sizeof(struct pbitmap_header)) {
		const struct pbitmap_header *h = (const void *)section;

		*why = section_size >= sizeof(*h) && le16toh(h->version) == 1 ?
			"format version 1 (an earlier pbitmap): pbitmap add stamps it anew" :
			"section size holds no two record slots";
		return -1;
	}
	for (int i = 0; i < PBITMAP_NR_SLOTS; i++) {
		const unsigned char *slot = section + (size_t)i * stride;

		bad[i] = pb_record_check(slot, size);
		runs[i] = le64toh(((const struct pbitmap_header *)slot)->runs);
		if (!bad[i] && (cur < 0 || runs[i] > runs[cur]))
			cur = i;
	}
	if (cur < 0)
		*why = bad[0];
	return cur;
}

int pb_record_init(struct pb_record *r, uint64_t content_size,
		   unsigned int page_shift, unsigned int nr_planes,
		   unsigned int threshold, uint32_t flags)
{
	struct pbitmap_header *h;
	size_t size;

	if (page_shift < PBITMAP_MIN_PAGE_SHIFT ||
	    page_shift > PBITMAP_MAX_PAGE_SHIFT || nr_planes < 1 ||
	    nr_planes > PBITMAP_MAX_PLANES || threshold < 1 ||
	    threshold > nr_planes || (flags & ~PBITMAP_F_ALL) ||
	    ((flags & PBITMAP_F_NO_LEARN) && (flags & PBITMAP_F_LEARN_EVERY))) {
		errno = EINVAL;
		return PB_FAIL;
	}
	size = pb_record_size(content_size, page_shift, nr_planes);
	if (!size) {
		errno = EFBIG;
		return PB_FAIL;
	}
	r->buf = calloc(1, size);
	if (!r->buf)
		return PB_FAIL;
	r->size = size;
	h = pb_hdr(r);
	h->magic = htole32(PBITMAP_MAGIC);
	h->version = htole16(PBITMAP_VERSION);
	h->header_size = htole16(sizeof(*h));
	h->flags = htole32(flags);
	h->nr_pages = htole64(nr_granules(content_size, page_shift));
	h->content_size = htole64(content_size);
	h->plane_size = htole32(pb_plane_size(le64toh(h->nr_pages)));
	h->page_shift = (uint8_t)page_shift;
	h->nr_planes = (uint8_t)nr_planes;
	h->threshold = (uint8_t)threshold;
	h->newest_plane = 0;
	pb_record_seal(r);
	return 0;
}

void pb_record_free(struct pb_record *r)
{
	free(r->buf);
	r->buf = NULL;
	r->size = 0;
}

int pb_record_from(struct pb_record *r, const void *buf, size_t size)
{
	r->buf = malloc(size);
	if (!r->buf)
		return PB_FAIL;
	memcpy(r->buf, buf, size);
	r->size = size;
	return 0;
}

uint32_t pb_record_checksum(const void *buf, size_t size)
{
	const struct pbitmap_header *h = buf;
	static const unsigned char zero[4];
	size_t sum_at = offsetof(struct pbitmap_header, checksum);
	uLong crc = crc32(0, Z_NULL, 0);

	crc = crc32(crc, buf, (uInt)sum_at);
	crc = crc32(crc, zero, sizeof(zero));
	crc = crc32_z(crc, (const unsigned char *)buf + sum_at + sizeof(h->checksum),
		      size - sum_at - sizeof(h->checksum));
	return (uint32_t)crc;
}

void pb_record_seal(struct pb_record *r)
{
	pb_hdr(r)->checksum = htole32(pb_record_checksum(r->buf, r->size));
}

/* Bits past nr_pages in the last byte(s) of a plane must be clear. */
static bool plane_tail_clear(const unsigned char *plane, uint32_t plane_size,
			     uint64_t nr_pages)
{
	uint64_t n;

	for (n = nr_pages; n < (uint64_t)plane_size * 8; n++) {
		if ((n & 7) == 0) {
			/* whole bytes from here on */
			for (uint64_t b = n >> 3; b < plane_size; b++)
				if (plane[b])
					return false;
			return true;
		}
		if (pb_test_bit(plane, n))
			return false;
	}
	return true;
}

const char *pb_record_check(const void *buf, size_t size)
{
	const struct pbitmap_header *h = buf;
	uint64_t nr_pages, content_size, expect_pages;
	uint32_t plane_size, flags, plan_size;
	const char *why;
	unsigned int shift;

	if (size < sizeof(*h))
		return "record shorter than its header";
	if (le32toh(h->magic) != PBITMAP_MAGIC)
		return "bad magic";
	if (le16toh(h->version) == 1)
		return "format version 1 (an earlier pbitmap): pbitmap add stamps it anew";
	if (le16toh(h->version) != PBITMAP_VERSION &&
	    le16toh(h->version) != PBITMAP_VERSION_PLAN)
		return "unsupported version";
	if (le16toh(h->header_size) != sizeof(*h))
		return "bad header size";
	flags = le32toh(h->flags);
	if (flags & ~PBITMAP_F_ALL)
		return "unknown flags";
	if ((flags & PBITMAP_F_NO_LEARN) && (flags & PBITMAP_F_LEARN_EVERY))
		return "two learning policies";
	shift = h->page_shift;
	if (shift < PBITMAP_MIN_PAGE_SHIFT || shift > PBITMAP_MAX_PAGE_SHIFT)
		return "page shift out of range";
	if (h->nr_planes < 1 || h->nr_planes > PBITMAP_MAX_PLANES)
		return "number of generations out of range";
	if (h->threshold < 1 || h->threshold > h->nr_planes)
		return "threshold out of range";
	if (h->newest_plane >= h->nr_planes)
		return "newest plane out of range";
	if (h->reserved0)
		return "reserved fields not zero";
	for (size_t i = 0; i < sizeof(h->reserved) / sizeof(h->reserved[0]); i++)
		if (h->reserved[i])
			return "reserved fields not zero";
	if (h->reserved1)
		return "reserved fields not zero";
	plan_size = le32toh(h->plan_size);
	if (plan_size && le16toh(h->version) == PBITMAP_VERSION)
		return "a plan in a version 2 record";
	if (plan_size % PBITMAP_PLAN_ALIGN || plan_size > PBITMAP_PLAN_MAX_SIZE)
		return "plan area size out of range";
	if (plan_size && (flags & PBITMAP_F_XATTR))
		return "a plan in a data file's record";
	content_size = le64toh(h->content_size);
	nr_pages = le64toh(h->nr_pages);
	if (content_size == 0 || nr_pages == 0)
		return "covers no pages";
	expect_pages = nr_granules(content_size, shift);
	if (nr_pages != expect_pages)
		return "page count does not match content size";
	plane_size = le32toh(h->plane_size);
	if (nr_pages > (uint64_t)PBITMAP_MAX_RECORD_SIZE * 8 ||
	    plane_size != pb_plane_size(nr_pages))
		return "plane size does not match page count";
	if (size > PBITMAP_MAX_RECORD_SIZE ||
	    size != sizeof(*h) + (size_t)plane_size * h->nr_planes + plan_size)
		return "record size does not match its geometry";
	if (pb_record_checksum(buf, size) != le32toh(h->checksum))
		return "checksum mismatch";
	for (unsigned int i = 0; i < h->nr_planes; i++) {
		const unsigned char *p = (const unsigned char *)buf + sizeof(*h) +
					 (size_t)plane_size * i;
		if (!plane_tail_clear(p, plane_size, nr_pages))
			return "bits set past the last page";
	}
	why = pb_plan_check((const unsigned char *)buf + size - plan_size, plan_size);
	return why;
}

int pb_record_set_plan_area(struct pb_record *r, size_t plan_size)
{
	struct pbitmap_header *h = pb_hdr(r);
	size_t base = r->size - le32toh(h->plan_size);
	unsigned char *buf;

	if (plan_size % PBITMAP_PLAN_ALIGN || plan_size > PBITMAP_PLAN_MAX_SIZE ||
	    base + plan_size > PBITMAP_MAX_RECORD_SIZE ||
	    (plan_size && (le32toh(h->flags) & PBITMAP_F_XATTR))) {
		errno = EINVAL;
		return PB_FAIL;
	}
	buf = realloc(r->buf, base + plan_size ? base + plan_size : 1);
	if (!buf)
		return PB_FAIL;
	r->buf = buf;
	r->size = base + plan_size;
	memset(r->buf + base, 0, plan_size);
	h = pb_hdr(r);
	h->plan_size = htole32((uint32_t)plan_size);
	h->version = htole16(plan_size ? PBITMAP_VERSION_PLAN : PBITMAP_VERSION);
	pb_record_seal(r);
	return 0;
}

unsigned char *pb_plan_area(const struct pb_record *r, size_t *size)
{
	*size = le32toh(pb_hdr(r)->plan_size);
	return r->buf + r->size - *size;
}

unsigned char *pb_plane(const struct pb_record *r, unsigned int age)
{
	const struct pbitmap_header *h = pb_hdr(r);
	unsigned int n = h->nr_planes;
	unsigned int idx = (h->newest_plane + n - (age % n)) % n;

	return r->buf + sizeof(*h) + (size_t)le32toh(h->plane_size) * idx;
}

uint64_t pb_nr_pages(const struct pb_record *r)
{
	return le64toh(pb_hdr(r)->nr_pages);
}

unsigned int pb_page_shift(const struct pb_record *r)
{
	return pb_hdr(r)->page_shift;
}

uint64_t pb_count_bits(const unsigned char *plane, uint64_t nr_pages)
{
	uint64_t count = 0;
	uint64_t bytes = (nr_pages + 7) / 8;

	for (uint64_t i = 0; i < bytes; i++)
		count += (uint64_t)__builtin_popcount(plane[i]);
	return count;
}

void pb_shift_in(struct pb_record *r, const unsigned char *observed, time_t now)
{
	struct pbitmap_header *h = pb_hdr(r);
	uint32_t plane_size = le32toh(h->plane_size);

	h->newest_plane = (uint8_t)((h->newest_plane + 1) % h->nr_planes);
	memcpy(pb_plane(r, 0), observed, plane_size);
	h->runs = htole64(le64toh(h->runs) + 1);
	h->last_update = htole64((uint64_t)now);
	pb_record_seal(r);
}

void pb_record_carry(struct pb_record *dst, const struct pb_record *src)
{
	const struct pbitmap_header *sh = pb_hdr(src);
	struct pbitmap_header *dh = pb_hdr(dst);
	unsigned int gens = sh->nr_planes < dh->nr_planes ? sh->nr_planes : dh->nr_planes;
	uint64_t src_pages = pb_nr_pages(src), dst_pages = pb_nr_pages(dst);

	for (unsigned int age = 0; age < gens; age++) {
		const unsigned char *from = pb_plane(src, age);
		unsigned char *to = pb_plane(dst, age);
		uint64_t first, count, n = 0;

		while (pb_next_run(from, src_pages, n, &first, &count)) {
			uint64_t lo = (first << sh->page_shift) >> dh->page_shift;
			uint64_t hi = (((first + count) << sh->page_shift) - 1) >> dh->page_shift;

			for (uint64_t m = lo; m <= hi && m < dst_pages; m++)
				pb_set_bit(to, m);
			n = first + count;
		}
	}
	dh->runs = sh->runs;
	dh->last_update = sh->last_update;
	pb_plan_carry(dst, src);
	pb_record_seal(dst);
}

void pb_effective(const struct pb_record *r, unsigned char *out)
{
	const struct pbitmap_header *h = pb_hdr(r);
	uint32_t plane_size = le32toh(h->plane_size);
	uint64_t nr_pages = le64toh(h->nr_pages);

	memset(out, 0, plane_size);
	if (h->threshold == 1) {
		for (unsigned int i = 0; i < h->nr_planes; i++) {
			const unsigned char *p = pb_plane(r, i);

			for (uint32_t b = 0; b < plane_size; b++)
				out[b] |= p[b];
		}
		return;
	}
	for (uint64_t n = 0; n < nr_pages; n++) {
		unsigned int votes = 0;

		for (unsigned int i = 0; i < h->nr_planes; i++)
			votes += pb_test_bit(pb_plane(r, i), n);
		if (votes >= h->threshold)
			pb_set_bit(out, n);
	}
}

bool pb_next_run(const unsigned char *plane, uint64_t nr_pages, uint64_t from,
		 uint64_t *first, uint64_t *count)
{
	uint64_t n = from;

	while (n < nr_pages && !pb_test_bit(plane, n)) {
		if ((n & 7) == 0 && plane[n >> 3] == 0)
			n += 8;
		else
			n++;
	}
	if (n >= nr_pages)
		return false;
	*first = n;
	while (n < nr_pages && pb_test_bit(plane, n)) {
		if ((n & 7) == 0 && plane[n >> 3] == 0xff && n + 8 <= nr_pages)
			n += 8;
		else
			n++;
	}
	*count = n - *first;
	return true;
}
