// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The marker of a stamped ELF file: its user.pbitmap attribute holds only a
 * struct pbitmap_marker saying where the record is.  The kernel then finds
 * out whether a library it maps is stamped with one attribute lookup, which
 * on local filesystems reads nothing beyond the inode, instead of reading
 * the section header table of every library at every mmap.
 *
 * The section stays the durable copy: the marker is derived from it
 * (offset, size, file size) and written whenever a stamped file is written,
 * on the new copy before it is renamed into place (pbfile.c), so no name
 * ever leads to a stamped file with a stale marker.  A file that lost it
 * (copied without attributes) still has its bitmap; the kernel just does not
 * prefetch it until `pbitmap add` restores the marker.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#include "pbitmap.h"

_Static_assert(sizeof(struct pbitmap_marker) == 32, "struct pbitmap_marker is 32 bytes");

/* CRC-32 of the 32 marker bytes with the checksum field zero. */
static uint32_t marker_checksum(const struct pbitmap_marker *m)
{
	struct pbitmap_marker z = *m;

	z.checksum = 0;
	return (uint32_t)crc32(crc32(0, Z_NULL, 0), (const Bytef *)&z, sizeof(z));
}

void pb_marker_make(struct pbitmap_marker *m, uint64_t record_offset,
		    uint32_t record_size, uint64_t file_size)
{
	memset(m, 0, sizeof(*m));
	m->magic = htole32(PBITMAP_MARKER_MAGIC);
	m->record_size = htole32(record_size);
	m->record_offset = htole64(record_offset);
	m->file_size = htole64(file_size);
	m->checksum = htole32(marker_checksum(m));
}

/* The first 4 bytes of an attribute value, as a number; 0 if shorter. */
static uint32_t value_magic(const void *val, size_t len)
{
	uint32_t magic = 0;

	if (len >= sizeof(magic))
		memcpy(&magic, val, sizeof(magic));
	return le32toh(magic);
}

const char *pb_marker_check(const void *val, size_t len, const struct pbitmap_marker *want)
{
	struct pbitmap_marker m;

	if (value_magic(val, len) == PBITMAP_XATTR_MAGIC)
		return "the attribute holds a data file's record (PBXZ), not a marker";
	if (len != sizeof(m))
		return "the attribute is not 32 bytes long";
	memcpy(&m, val, sizeof(m));
	if (le32toh(m.magic) != PBITMAP_MARKER_MAGIC)
		return "bad magic";
	if (le32toh(m.checksum) != marker_checksum(&m))
		return "checksum mismatch";
	if (m.reserved)
		return "reserved field is not zero";
	if (want && m.record_offset != want->record_offset)
		return "its record offset is not the .pbitmap section's";
	if (want && m.record_size != want->record_size)
		return "its record size is not the .pbitmap section's";
	if (want && m.file_size != want->file_size)
		return "it was made for a file of another size";
	return NULL;
}

bool pb_marker_is_one(const void *val, size_t len)
{
	return value_magic(val, len) == PBITMAP_MARKER_MAGIC;
}

bool pb_attr_is_record(const void *val, size_t len)
{
	return value_magic(val, len) == PBITMAP_XATTR_MAGIC;
}

void pb_marker_load(struct pb_file *f, const struct pbitmap_marker *want)
{
	unsigned char val[64];
	ssize_t len = fgetxattr(f->fd, PBITMAP_XATTR_NAME, val, sizeof(val));

	f->marker_why = NULL;
	if (len < 0) {
		if (errno == ENODATA)
			f->marker = want ? PB_MARKER_MISSING : PB_MARKER_NONE;
		else if (errno == ENOTSUP)
			f->marker = want ? PB_MARKER_UNSUPPORTED : PB_MARKER_NONE;
		else if (errno == ERANGE) {	/* longer than any marker */
			f->marker = want ? PB_MARKER_STALE : PB_MARKER_NONE;
			f->marker_why = "the attribute is not 32 bytes long";
		} else {
			f->marker = want ? PB_MARKER_STALE : PB_MARKER_NONE;
			f->marker_why = "it cannot be read";
		}
		return;
	}
	if (!want) {
		/* Not stamped: only a marker is out of place here, not another value. */
		f->marker = pb_marker_is_one(val, (size_t)len) ? PB_MARKER_STRAY : PB_MARKER_NONE;
		return;
	}
	f->marker_why = pb_marker_check(val, (size_t)len, want);
	f->marker = f->marker_why ? PB_MARKER_STALE : PB_MARKER_OK;
}

const char *pb_marker_state_name(enum pb_marker_state s)
{
	switch (s) {
	case PB_MARKER_OK: return "ok";
	case PB_MARKER_MISSING: return "missing";
	case PB_MARKER_STALE: return "stale";
	case PB_MARKER_UNSUPPORTED: return "unsupported";
	case PB_MARKER_STRAY: return "stray";
	default: return "none";
	}
}

/*
 * Give f->fd the marker @want, or take it away (@want NULL).  A filesystem
 * without user attributes cannot hold one: the stamp is complete without it
 * (user space prefetches it as before), so that is a warning, not an error.
 */
int pb_marker_write(struct pb_file *f, const struct pbitmap_marker *want)
{
	if (!want) {
		if (fremovexattr(f->fd, PBITMAP_XATTR_NAME) && errno != ENODATA && errno != ENOTSUP)
			return pb_error_errno(f->path, "removing the " PBITMAP_XATTR_NAME " marker");
		f->marker = PB_MARKER_NONE;
		return 0;
	}
	if (fsetxattr(f->fd, PBITMAP_XATTR_NAME, want, sizeof(*want), 0)) {
		if (errno != ENOTSUP)
			return pb_error_errno(f->path, "cannot set the " PBITMAP_XATTR_NAME " marker");
		pb_marker_warn_unsupported(f);
		f->marker = PB_MARKER_UNSUPPORTED;
		return 0;
	}
	pb_fault_point("marker-written");
	f->marker = PB_MARKER_OK;
	f->marker_why = NULL;
	return 0;
}

void pb_marker_warn_unsupported(const struct pb_file *f)
{
	pb_error(f->path, "cannot set the " PBITMAP_XATTR_NAME " marker (the filesystem does "
		 "not support user extended attributes): the kernel will not prefetch it");
}

/* The record through the marker: see pbitmap.h. */
const char *pb_marker_record(int fd, const struct stat *st, struct pb_record *r)
{
	struct pbitmap_marker m;
	ssize_t len = fgetxattr(fd, PBITMAP_XATTR_NAME, &m, sizeof(m));

	if (len < 0)
		return errno == ENODATA ? "not stamped" : "cannot read user.pbitmap";
	return pb_marker_record_at(fd, st, &m, (size_t)len, r);
}

/* The record through a marker already read: see pbitmap.h. */
const char *pb_marker_record_at(int fd, const struct stat *st, const void *val, size_t len,
				struct pb_record *r)
{
	struct pbitmap_marker m;
	unsigned char *section;
	uint64_t off, size;
	const char *why = pb_marker_check(val, len, NULL);
	size_t stride, slot;
	int cur;

	if (why)
		return why;
	memcpy(&m, val, sizeof(m));
	off = le64toh(m.record_offset);
	size = le32toh(m.record_size);
	if (le64toh(m.file_size) != (uint64_t)st->st_size || off > (uint64_t)st->st_size ||
	    size > (uint64_t)st->st_size - off)
		return "the marker was made for a file of another size";
	slot = pb_slot_size(size, &stride);
	if (!slot)
		return "the section size holds no two record slots";
	section = malloc(size);
	if (!section)
		return "out of memory";
	if (pread(fd, section, size, (off_t)off) != (ssize_t)size) {
		free(section);
		return "cannot read the record";
	}
	cur = pb_slot_current(section, size, &why);
	if (cur >= 0) {
		const struct pbitmap_header *h = (const void *)(section + (size_t)cur * stride);
		uint64_t content = le64toh(h->content_size), tail = le64toh(h->tail_size);

		if (le64toh(h->record_offset) != off || content > off ||
		    tail != (uint64_t)st->st_size - content)
			why = "the record does not agree with the marker and the file's size";
		else if (le32toh(h->flags) & PBITMAP_F_XATTR)
			why = "an attribute's record in an ELF section";
		else if (pb_record_from(r, h, slot))
			why = "out of memory";
	} else if (!why) {
		why = "no valid record";
	}
	free(section);
	return why;
}
