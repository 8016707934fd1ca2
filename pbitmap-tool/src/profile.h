/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Portable profiles (docs/FORMAT.md, "Portable profiles"): a bitmap as
 * text, with what it takes to carry it into another build of the file.
 *
 *   profile.c  the text format: parse (a pure function of its input, for
 *              the fuzz target) and write
 *   anchors.c  the anchors of an ELF file (sections, .dynsym symbols, the
 *              functions of .eh_frame_hdr), its build-id, and the carrying
 *              of byte ranges from one build to another through them
 *   cmd-profile.c  `pbitmap export`, `pbitmap import`, and the profiles
 *              `pbitmap merge` takes as sources
 */
#ifndef PBITMAP_PROFILE_H
#define PBITMAP_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pbitmap.h"

#define PB_PROFILE_MAGIC	"pbitmap-profile"
#define PB_PROFILE_VERSION	1
/* Refused above these: a profile is read whole into memory. */
#define PB_PROFILE_MAX_BYTES	(256u << 20)
#define PB_PROFILE_MAX_LINE	(64u << 10)
#define PB_BUILD_ID_MAX		64	/* bytes; hex is twice that */

/* Byte ranges [start, start + len), sorted, disjoint, not adjacent. */
struct pb_byte_range {
	uint64_t start, len;
};

struct pb_byte_ranges {
	struct pb_byte_range *v;
	size_t n, cap;
};

/* Append [start, start + len); merges with the last range when they touch. */
int pb_byte_ranges_add(struct pb_byte_ranges *r, uint64_t start, uint64_t len);
/* Sort and merge ranges added out of order. */
void pb_byte_ranges_normalise(struct pb_byte_ranges *r);
uint64_t pb_byte_ranges_bytes(const struct pb_byte_ranges *r);
void pb_byte_ranges_free(struct pb_byte_ranges *r);

enum pb_anchor_kind {
	PB_ANCHOR_SECTION,	/* a section with file bytes, by name; "@headers"
				 * for the ELF and program headers */
	PB_ANCHOR_SYMBOL,	/* a defined .dynsym symbol with a size, by name */
	PB_ANCHOR_FUNCTION,	/* a function of .eh_frame_hdr's table, by its
				 * unwind fingerprint and position */
};

/*
 * A named (or fingerprinted) stretch of an ELF file's original bytes.
 * Offsets are file offsets, so the ranges of a profile and its anchors
 * are in the same terms.
 */
struct pb_anchor {
	enum pb_anchor_kind kind;
	uint64_t offset, size;
	uint64_t hash;		/* function: FNV-1a of its length and CFI program */
	uint32_t ord;		/* function: its index in the table, by address */
	char *name;		/* section or symbol; NULL for a function */
};

struct pb_anchors {
	struct pb_anchor *v;
	size_t n, cap;
};

void pb_anchors_free(struct pb_anchors *a);

/* One file of a profile. */
struct pb_profile_entry {
	char *path;
	bool elf;			/* kind elf (else data) */
	uint64_t size;			/* bytes of original content */
	char sha256[65];		/* of the original content, lowercase hex */
	char build_id[2 * PB_BUILD_ID_MAX + 1];	/* "" if none */
	uint32_t policy;		/* 0, PBITMAP_F_NO_LEARN or PBITMAP_F_LEARN_EVERY */
	unsigned int granule_shift;	/* the source record's; informative */
	unsigned int threshold;
	unsigned int nr_gens;		/* 1..PBITMAP_MAX_PLANES */
	uint64_t runs, last_update;
	struct pb_byte_ranges gen[PBITMAP_MAX_PLANES];	/* by age, 0 newest */
	struct pb_anchors anchors;
};

struct pb_profile {
	struct pb_profile_entry *v;
	size_t n, cap;
};

/*
 * Parse a whole profile held in @text (@len bytes, need not be
 * NUL-terminated).  Returns NULL and fills @p, or a reason for humans with
 * *@line set to the line at fault (0: the whole text); @p is then empty.
 * Pure function of its input: the fuzz target calls it on arbitrary bytes.
 */
const char *pb_profile_parse(const char *text, size_t len, struct pb_profile *p,
			     unsigned long *line);
/* Write @p as text.  Returns 0, or -1 with errno set (a write error). */
int pb_profile_write(FILE *out, const struct pb_profile *p);
void pb_profile_free(struct pb_profile *p);
void pb_profile_entry_free(struct pb_profile_entry *e);
/* Is this text a profile (by its first line)? */
bool pb_profile_is_one(const void *buf, size_t len);
/* "never", "owner", "every": the words of `learn` (as pb_learn_policy()). */
bool pb_profile_policy(const char *word, uint32_t *policy);

/*
 * The anchors of the ELF image @buf (the file's original bytes) and its
 * GNU build-id (hex, "" if none).  Returns NULL, or a reason the image has
 * none (not ELF, no section headers).  Pure function of its input.
 */
const char *pb_anchors_of(const void *buf, size_t size, struct pb_anchors *a,
			  char build_id[2 * PB_BUILD_ID_MAX + 1]);

/* What carrying ranges through anchors did, in bytes. */
struct pb_carry_stats {
	uint64_t total;		/* marked bytes in the profile, all generations */
	uint64_t by_symbol, by_function, by_section;	/* placed */
	uint64_t dropped;	/* in a symbol or function that has no match */
	uint64_t gaps;		/* in no anchor: between sections, between functions */
	/* Symbols and functions holding marked bytes, and how many matched. */
	uint64_t code_anchors, code_matched;
};

/*
 * Carry the ranges @in[0..nr) (the generations) of a file whose anchors
 * were @from into a file of @new_size bytes whose anchors are @to, adding
 * what is placed to @out[0..nr).  Anchors are matched once (sections and
 * symbols by name, a name not unique on either side not used; functions by
 * fingerprint and position); then each byte goes through the most precise
 * anchor that holds it (symbol, function, section).  A byte inside a
 * function or symbol without a match is dropped rather than guessed; bytes
 * of a section holding functions but in none are padding, not carried.
 * Pure; linear in the anchors and ranges but for sorting and searching.
 */
int pb_carry_ranges(const struct pb_anchors *from, const struct pb_anchors *to,
		    const struct pb_byte_ranges *in, unsigned int nr, uint64_t new_size,
		    struct pb_byte_ranges *out, struct pb_carry_stats *st);

/*
 * The byte ranges of generation @age of @r, granules clipped to its
 * content size.
 */
int pb_record_ranges(const struct pb_record *r, unsigned int age, struct pb_byte_ranges *out);
/* Mark in plane @plane of @r every granule that @ranges touches. */
void pb_record_mark(struct pb_record *r, unsigned char *plane, const struct pb_byte_ranges *ranges);

/* ---- applying profiles to a file (cmd-profile.c) ------------------------ */

/* A file profiles are applied to: its original bytes, digest and anchors. */
struct pb_target {
	struct pb_file *f;
	unsigned char *orig;
	size_t size;
	char sha256[PB_DIGEST_HEX_MAX];
	char build_id[2 * PB_BUILD_ID_MAX + 1];
	struct pb_anchors anchors;	/* empty for a data file */
};

/* Read @f's original bytes and what is known of them.  0 or PB_FAIL. */
int pb_target_load(struct pb_target *t, struct pb_file *f);
void pb_target_free(struct pb_target *t);
/* Has @p an entry for @t by content, build-id or name (not merely the only one)? */
bool pb_profile_has_entry(const struct pb_profile *p, const struct pb_target *t);
/* Read and parse the profile file @name ("-": stdin).  0 or PB_FAIL, reported. */
int pb_profile_load(const char *name, struct pb_profile *p);
/*
 * The byte ranges, by age, that the entry of @p for @t gives @t: exactly
 * the profile's for the same content, else carried through the anchors.
 * *@entry is the entry used; *@exact says which way.  0, or PB_FAIL
 * (reported, naming @pname) when no entry applies or nothing carries.
 */
int pb_profile_apply(const struct pb_profile *p, const char *pname, struct pb_target *t,
		     struct pb_byte_ranges gens[PBITMAP_MAX_PLANES],
		     const struct pb_profile_entry **entry, struct pb_carry_stats *st,
		     bool *exact);

#endif /* PBITMAP_PROFILE_H */
