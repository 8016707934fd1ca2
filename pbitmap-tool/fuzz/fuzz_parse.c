// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for every parser of untrusted bytes in pbitmap:
 *
 *   pb_elf_check_memory()  the ELF inspection pb_open() runs on a file
 *                          (and, for a stamped file, the undo path)
 *   pb_record_check()      a raw record, as found in a .pbitmap section
 *   pb_xattr_decode()      a user.pbitmap attribute value (zstd inside)
 *   pb_marker_check()      a user.pbitmap marker of a stamped ELF file
 *   pb_anchors_of()        an ELF file's sections, .dynsym and .eh_frame_hdr
 *                          table and FDEs (portable profiles' anchors)
 *
 * A record that passes the checks is then used the way the tool uses it
 * (generations, effective bitmap, runs), so that "valid" really means safe.
 *
 * Linked without the command modules (FUZZ_CMDS in the Makefile), so this
 * file provides messages.c's message functions, silent: a fuzzer printing
 * an error line for each rejected input would spend its time in write(2).
 *
 *   make build/fuzz/fuzz_parse
 *   build/fuzz/fuzz_parse -max_len=65536 CORPUS pbitmap-tool/fuzz/seeds
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pbitmap.h"
#include "profile.h"

const char *pb_progname = "pbitmap";
int pb_verbose;
int pb_quiet = 1;

int pb_error(const char *path, const char *fmt, ...)
{
	(void)path;
	(void)fmt;
	return PB_FAIL;
}

int pb_error_errno(const char *path, const char *fmt, ...)
{
	(void)path;
	(void)fmt;
	return PB_FAIL;
}

int pb_skip(const char *path, const char *fmt, ...)
{
	(void)path;
	(void)fmt;
	return PB_SKIPPED;
}

void pb_note(const char *path, const char *fmt, ...)
{
	(void)path;
	(void)fmt;
}

void pb_fault_point(const char *step)
{
	(void)step;
}

/* Use a record the checks accepted, as the tool would. */
static void exercise(const unsigned char *buf, size_t size)
{
	struct pb_record r;
	const struct pbitmap_header *h;
	unsigned char *eff;
	uint64_t nr_pages, first, count, from, total = 0;
	uint32_t plane_size;

	if (pb_record_from(&r, buf, size))
		return;
	h = pb_hdr(&r);
	nr_pages = pb_nr_pages(&r);
	plane_size = le32toh(h->plane_size);
	for (unsigned int age = 0; age < h->nr_planes; age++)
		total += pb_count_bits(pb_plane(&r, age), nr_pages);
	eff = malloc(plane_size);
	if (eff) {
		pb_effective(&r, eff);
		for (from = 0; pb_next_run(eff, nr_pages, from, &first, &count);
		     from = first + count) {
			if (count == 0 || first + count > nr_pages)
				abort();	/* a run outside the file */
		}
		/* Shift the effective set in: the record must stay valid. */
		pb_shift_in(&r, eff, 1);
		if (pb_record_check(r.buf, r.size))
			abort();
		free(eff);
	}
	(void)total;
	pb_record_free(&r);
}

/* A marker the check accepts is exactly the one its fields make. */
static void check_marker(const unsigned char *buf, size_t size)
{
	struct pbitmap_marker m, again;

	if (pb_marker_check(buf, size, NULL))
		return;
	memcpy(&m, buf, sizeof(m));
	pb_marker_make(&again, le64toh(m.record_offset), le32toh(m.record_size),
		       le64toh(m.file_size));
	if (memcmp(&m, &again, sizeof(m)) || pb_marker_check(buf, size, &again))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pb_record r = { 0 };
	struct pb_anchors anchors;
	char build_id[2 * PB_BUILD_ID_MAX + 1];
	unsigned char *copy;

	(void)pb_elf_check_memory(data, size);

	/* Anchors: every one must lie within the image. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!pb_anchors_of(copy, size, &anchors, build_id))
		for (size_t i = 0; i < anchors.n; i++)
			if (!anchors.v[i].size || anchors.v[i].offset > size ||
			    anchors.v[i].size > size - anchors.v[i].offset)
				abort();
	pb_anchors_free(&anchors);
	free(copy);

	/* Records are read into malloc'ed buffers: give the parser one too. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!pb_record_check(copy, size))
		exercise(copy, size);

	check_marker(copy, size);
	if (!pb_xattr_decode(copy, size, &r)) {
		if (pb_record_check(r.buf, r.size))
			abort();	/* decode accepted what check rejects */
		exercise(r.buf, r.size);
	}
	pb_record_free(&r);
	free(copy);
	return 0;
}
