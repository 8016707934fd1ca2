/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pbitmap: internal interfaces shared by the tool's modules.
 *
 *   record.c   the record in memory: init, check, planes, generations
 *   elfstore.c the record in an ELF section: stamp, strip, undo, load, save
 *   xattrstore.c the record in the user.pbitmap xattr of a data file
 *   marker.c   the user.pbitmap marker of a stamped ELF file
 *   pbfile.c   opening files safely, policy checks, the operations on a file
 *   planfiles.c a start-up plan from files, into a program's plan area
 *   replace.c  the writers' lock; changing a file by renaming a copy over it
 *   confine.c  --root: every file opened by name is resolved inside the root
 *   digest.c   digests of the original bytes (libmd; SHA-224 on its SHA-256)
 *   observe.c  `pbitmap record`'s learning: ptrace and /proc/PID/pagemap
 *              (observe.h; cmd-record.c writes what it observed)
 *   pageset.c  sparse sets of page indices (what `record` observed)
 *   tracee.c   `record`'s system-call stops and fault-around switch
 *   prefetch.c `pbitmap prefetch` and `pbitmap run`
 *   rpm.c      `pbitmap stamp` and `pbitmap rpm-verify`: rpm packages
 *   main.c, messages.c, args.c, filelist.c, cmd-*.c: the command line,
 *              see cli.h
 */
#ifndef PBITMAP_H
#define PBITMAP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <linux/pbitmap.h>

/* Return values of the pb_* functions below (besides 0 for success). */
enum {
	PB_FAIL = -1,	 /* error, already reported with the file name */
	PB_SKIPPED = -2, /* refused by policy (busy, signed, immutable, ro fs), reported */
	PB_NONE = -3,	 /* the file carries no bitmap (not reported) */
};

/* Exit codes of the command (documented in pbitmap.1). */
enum {
	PB_EXIT_OK = 0,
	PB_EXIT_FAIL = 1,
	PB_EXIT_USAGE = 2,
	PB_EXIT_SKIPPED = 3,
};

/*
 * Room for one more element in the array @v of @nr used and *@cap
 * allocated elements of @size bytes: @v itself if it has room, else @v
 * grown to twice its capacity (@first at first), *@cap updated; NULL
 * (errno ENOMEM) when memory runs out, and @v is then left as it was.
 */
static inline void *pb_grow(void *v, size_t nr, size_t *cap, size_t size, size_t first)
{
	size_t want = *cap ? 2 * *cap : first;

	if (nr < *cap)
		return v;
	if (want > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	v = realloc(v, want * size);
	if (v)
		*cap = want;
	return v;
}

/* ---- messages (messages.c) --------------------------------------------- */

extern const char *pb_progname;
extern int pb_verbose;	/* -v: more detail */
extern int pb_quiet;	/* -q: no notes, only errors */

/* "pbitmap: PATH: message" on stderr.  Returns PB_FAIL. */
int pb_error(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Same with ": strerror(errno)" appended. */
int pb_error_errno(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A refusal by policy.  Returns PB_SKIPPED. */
int pb_skip(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Informational, suppressed by -q. */
void pb_note(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "pbitmap: message" and a hint at --help on stderr.  Returns PB_EXIT_USAGE. */
int pb_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Failure injection for the crash-safety tests (PBITMAP_FAULT=STEP). */
void pb_fault_point(const char *step);

/* ---- the record in memory (record.c) ----------------------------------- */

struct pb_record {
	unsigned char *buf;	/* header, then planes; malloc'ed */
	size_t size;
};

struct pb_params {
	unsigned int page_shift;	/* 0: default (12, or chosen for xattr fit) */
	unsigned int nr_planes;		/* 0: default 4 */
	unsigned int threshold;		/* 0: default 1 */
	uint32_t flags;			/* PBITMAP_F_NO_LEARN, PBITMAP_F_LEARN_EVERY */
	bool set_flags;			/* flags given: change them on a stamped file */
	size_t xattr_max;		/* 0: default PB_XATTR_MAX_DEFAULT */
	size_t plan_size;		/* bytes of the start-up plan area, ELF only */
	bool set_plan;			/* plan_size given (0: none), for any file; else
					 * pb_plan_size_for() picks it */
	const struct pb_record *carry;	/* generations to carry into the new record */
};

#define PB_DEFAULT_PLANES	4
#define PB_DEFAULT_THRESHOLD	1
/*
 * The start-up plan area an ELF executable gets when add is not given
 * --plan-size (pb_default_plan_size() says which files are executables).
 * The largest plan the kernel learned in this project's benchmark is gdb's,
 * 19690 bytes (123 files, 674 ranges); 30 of 33 programs of the test image
 * learned at most 8544 bytes in one run each (docs/bench/
 * 2026-11-30-plan-sizes.md).  32 KiB holds the largest measured with room;
 * 64 KiB would double the cost.  The cost: both slots of the section hold
 * the area, so a stamped executable grows by 64 KiB more than without one
 * (2000 executables: about 128 MiB).
 */
#define PB_DEFAULT_PLAN_SIZE	32768

static inline struct pbitmap_header *pb_hdr(const struct pb_record *r)
{
	return (struct pbitmap_header *)r->buf;
}

/* Bytes per plane for @nr_pages granules. */
uint32_t pb_plane_size(uint64_t nr_pages);
/* Record size for the given geometry, 0 if above PBITMAP_MAX_RECORD_SIZE. */
size_t pb_record_size(uint64_t content_size, unsigned int page_shift,
		      unsigned int nr_planes);
/* Size of an ELF section holding both slots of a @record_size record. */
uint64_t pb_section_size(size_t record_size);
/*
 * The record size whose two slots fill a section of @section_size bytes,
 * and in *@stride where slot 1 starts; 0 when no record size does.
 */
size_t pb_slot_size(uint64_t section_size, size_t *stride);
/*
 * The current slot of a section (include/uapi/linux/pbitmap.h): the valid
 * one with more runs, slot 0 on a tie.  Returns its index, or -1 with
 * *@why set to slot 0's fault (or the section's) when neither is valid.
 */
int pb_slot_current(const unsigned char *section, uint64_t section_size,
		    const char **why);
/* Fresh, empty, sealed record.  Returns 0 or PB_FAIL (errno set). */
int pb_record_init(struct pb_record *r, uint64_t content_size,
		   unsigned int page_shift, unsigned int nr_planes,
		   unsigned int threshold, uint32_t flags);
void pb_record_free(struct pb_record *r);
/* Duplicate @buf[0..size) into @r (after pb_record_check said it is fine). */
int pb_record_from(struct pb_record *r, const void *buf, size_t size);
/*
 * Check a record in memory: sizes, geometry, reserved fields, padding bits
 * and checksum.  Returns NULL when valid, else a short reason for humans.
 * Pure function of its input: the fuzz target calls it on arbitrary bytes.
 */
const char *pb_record_check(const void *buf, size_t size);
/*
 * Give @r a start-up plan area of @plan_size bytes (0: none), empty; the
 * record becomes version 3 (version 2 without one).  Seals @r.
 */
int pb_record_set_plan_area(struct pb_record *r, size_t plan_size);
/* The plan area of @r and its size in *@size (0: none). */
unsigned char *pb_plan_area(const struct pb_record *r, size_t *size);
/* ---- the start-up plan in the plan area (plan.c) ---- */

/* Longest path in a plan, with its NUL: the kernel's PATH_MAX. */
#define PB_PLAN_PATH_MAX	4096

/* A range of a file in plan units (4 KiB). */
struct pb_plan_range {
	uint32_t start, nr;
};

/* A file to put in a plan: its identity and the ranges to read. */
struct pb_plan_file_in {
	const char *path;		/* absolute */
	uint64_t ino, size;
	uint32_t dev, generation;
	const struct pb_plan_range *ranges;
	size_t nr_ranges;
};

/* A checked plan, for reading (pointers into the area). */
struct pb_plan_view {
	uint32_t nr_files, nr_steps, used;
	const struct pbitmap_plan_file *files;
	const struct pbitmap_plan_step *steps;
	const pbitmap_plan_order_t *order;	/* nr_steps entries; NULL: none */
	const char *names;
	/* the metadata table (PBITMAP_PLAN_F_META): its head, NULL for none */
	const struct pbitmap_plan_meta *meta;
	const struct pbitmap_plan_meta_range *meta_ranges;	/* nr_meta of them */
	uint32_t nr_meta;
};

/* Steps @first to @last of one file, joined into one read. */
struct pb_plan_run {
	uint32_t first, last;	/* step indices, inclusive */
	uint32_t rank;		/* smallest position in the order table of its steps */
	uint32_t file;		/* index in the file table */
	uint64_t offset, length;	/* bytes, the gaps joined across included */
};

/* NULL when the area holds a valid plan or none, else why not. */
const char *pb_plan_check(const unsigned char *area, size_t size);
bool pb_plan_empty(const unsigned char *area, size_t size);
/*
 * Copy @src's valid plan, its order and metadata tables with it, into
 * @dst's area when it fits; @dst is not sealed.
 */
void pb_plan_carry(struct pb_record *dst, const struct pb_record *src);
/*
 * Write a plan of @nr files into @area, their ranges in the order given,
 * with no order table and no metadata table (docs/FORMAT.md, "Start-up
 * plan": a kernel's to write).  Returns 0, or PB_FAIL with errno ENOSPC
 * (*@need: the size it takes) or E2BIG (more than the format holds).
 */
int pb_plan_build(unsigned char *area, size_t size, const struct pb_plan_file_in *in,
		  size_t nr, size_t *need);
/* Fill @v from a checked area: 1, or 0 when the plan is empty. */
int pb_plan_read(const unsigned char *area, size_t size, struct pb_plan_view *v);
/*
 * The reads a reader of the checked plan @v submits, in the order to
 * submit them (docs/FORMAT.md, "Start-up plan"): each file's steps joined
 * in file order, a step that starts less than @gap bytes past the end of
 * the run before it joining that run; then the runs in the order of their
 * rank, the first-needed first (the order table's), or in the steps' own
 * order without a table.  *@runs is malloc'ed (NULL for none); 0, or
 * PB_FAIL when out of memory.
 */
int pb_plan_runs(const struct pb_plan_view *v, uint64_t gap, struct pb_plan_run **runs,
		 uint32_t *nr_runs);

/* Recompute the checksum after changing the record. */
void pb_record_seal(struct pb_record *r);
uint32_t pb_record_checksum(const void *buf, size_t size);

/* Plane holding generation @age (0 = newest). */
unsigned char *pb_plane(const struct pb_record *r, unsigned int age);
uint64_t pb_nr_pages(const struct pb_record *r);
unsigned int pb_page_shift(const struct pb_record *r);

static inline bool pb_test_bit(const unsigned char *plane, uint64_t n)
{
	return plane[n >> 3] & (1u << (n & 7));
}

static inline void pb_set_bit(unsigned char *plane, uint64_t n)
{
	plane[n >> 3] |= (unsigned char)(1u << (n & 7));
}

static inline void pb_clear_bit(unsigned char *plane, uint64_t n)
{
	plane[n >> 3] &= (unsigned char)~(1u << (n & 7));
}

uint64_t pb_count_bits(const unsigned char *plane, uint64_t nr_pages);
/*
 * Make @observed (a plane-sized bitmap) the newest generation: the oldest
 * plane is dropped, runs++, last_update = @now.  Seals the record.
 */
void pb_shift_in(struct pb_record *r, const unsigned char *observed, time_t now);
/*
 * Copy the generations of @src into the empty record @dst (the newest ones,
 * as many as @dst keeps), mapping granules across granule sizes: a new
 * granule is set when any old granule overlapping it was.  Seals @dst.
 */
void pb_record_carry(struct pb_record *dst, const struct pb_record *src);
/* Bitmap (plane-sized, caller-allocated) of granules set in >= threshold planes. */
void pb_effective(const struct pb_record *r, unsigned char *out);
/*
 * Find the next run of set bits at or after @from.  Returns false when there
 * is none; else stores the first granule and the run length.
 */
bool pb_next_run(const unsigned char *plane, uint64_t nr_pages, uint64_t from,
		 uint64_t *first, uint64_t *count);

/* ---- --root (confine.c) ------------------------------------------------ */

/*
 * From now on, resolve every path given to pb_path_*() inside @dir (no
 * trailing slash), as if @dir were "/": absolute symlinks and ".." stay in
 * it.  Paths must then be @dir followed by "/NAME".  0 or PB_FAIL.
 */
int pb_confine(const char *dir);
/*
 * From now on (pbitmapd, chroot()ed into a task's root), walk every path
 * given to pb_path_*() one component at a time and refuse (EXDEV) any
 * that crosses or ends on a filesystem not among @devs (the local ones,
 * kept by the caller) and not on the mount of the directory it was found
 * in (btrfs: a nested subvolume's device is its own); refuse to open
 * anything but a regular file or a directory (ENXIO) unless O_PATH.
 */
void pb_confine_local(const dev_t *devs, size_t nr);
/*
 * open(2), lstat(2), readlink(2) and fopen(PATH, "r"), confined by
 * pb_confine() or pb_confine_local() once it has run.  Every name-based access to a file the
 * tool handles goes through these (errno set on failure).
 */
int pb_path_open(const char *path, int oflags, mode_t mode);
/*
 * Open a path of a start-up plan for reading: as pb_path_open(), but once
 * pb_confine_local() has run, no symbolic link and no ".." (the kernel's
 * plan walk: plans hold canonical paths, so another spelling is not the
 * file planned).
 */
int pb_path_open_plan(const char *path);
int pb_path_lstat(const char *path, struct stat *st);
ssize_t pb_path_readlink(const char *path, char *buf, size_t size);
FILE *pb_path_fopen_read(const char *path);

/* ---- files (pbfile.c, elfstore.c, xattrstore.c) ------------------------ */

enum pb_kind {
	PB_KIND_UNKNOWN, /* not looked at yet */
	PB_KIND_ELF,	/* record in the .pbitmap section */
	PB_KIND_DATA,	/* record in the user.pbitmap xattr */
};

/* Flags of pb_open(). */
#define PB_OPEN_WRITE	(1u << 0)	/* will modify: policy checks, writers' lock */
#define PB_OPEN_FOLLOW	(1u << 1)	/* accept a symlink and use its target */
#define PB_OPEN_QUIET	(1u << 2)	/* --stdin: skip dirs, symlinks, non-ELF, and
					 * ELF files other than EXEC/DYN silently */
#define PB_OPEN_ELF_ONLY (1u << 3)	/* refuse (PB_NONE) anything but ELF */
#define PB_OPEN_PROBE	(1u << 4)	/* only looking for a bitmap: an ELF file that
					 * could not carry one is PB_NONE, silently */
#define PB_OPEN_BREAK_LINKS (1u << 5)	/* replace an ELF file that has other hard
					 * links (only this name gets the new copy) */
#define PB_OPEN_RECHECK	(1u << 6)	/* a reader that must not report a record
					 * rewritten while it read as damaged: read a
					 * damaged one again under the lock, shared */
#define PB_OPEN_SHARED_LOCK (1u << 7)	/* read under the lock, shared (LOCK_SH) */

/* The user.pbitmap marker of an ELF file (marker.c), as pb_open() found it. */
enum pb_marker_state {
	PB_MARKER_NONE,		/* not looked at (probes, data files), or
				 * unstamped and without a marker: as it should be */
	PB_MARKER_OK,		/* stamped, and the marker describes the section */
	PB_MARKER_MISSING,	/* stamped, no marker (copied without attributes) */
	PB_MARKER_STALE,	/* stamped, the marker is wrong (f->marker_why) */
	PB_MARKER_UNSUPPORTED,	/* stamped, on a filesystem without user attributes */
	PB_MARKER_STRAY,	/* a marker on an ELF file without a stamp */
};

struct pb_elf;	/* private to elfstore.c */
/*
 * Replace @path by a file of @len bytes from @buf, mode @mode (replace.c):
 * written to a temporary file beside it and renamed over it, so that a
 * reader sees the old content or the new, never part of either.  The
 * temporary name is PATH.XXXXXX (mkostemp), or with PB_SMALL_FIXED_TMP
 * PATH.tmp, removed first and never followed if a link: a file one writer
 * rewrites again and again (pbitmapd's status) then leaves at most one
 * behind when the writer is killed.  PB_SMALL_SYNC: on disk before the
 * rename.  No messages.  Returns 0 or a negative errno value.
 */
#define PB_SMALL_SYNC		0x1
#define PB_SMALL_FIXED_TMP	0x2
int pb_write_small_file(const char *path, const void *buf, size_t len, mode_t mode,
			unsigned int flags);

struct pb_replace; /* private to replace.c */
struct pb_file;

/*
 * Where a file keeps its record: in the .pbitmap section of an ELF file
 * (elfstore.c) or in the user.pbitmap xattr of a data file (xattrstore.c).
 * pb_open() picks one; the verbs go through it (directly, or through
 * pb_unstamp(), pb_save() and the other pb_* calls below) and never test
 * which one a file has.
 */
struct pb_store_ops {
	const char *name;		/* "elf" or "xattr": show --json's "kind" */
	/*
	 * The record is part of the file's bytes (ELF): the file's size and
	 * digest differ from the original's while it is stamped, and the
	 * record always covers the original content.  An xattr leaves the
	 * bytes alone, and the file may have been rewritten since.
	 */
	bool in_content;
	/* A stamped file carries the user.pbitmap marker (ELF): f->marker. */
	bool has_marker;
	/*
	 * A change of the record: begin_change(), then stamp(), make_room()
	 * or write(), then end_change() with their result, which publishes
	 * the change all at once, or drops it and leaves the file as it was
	 * (ELF: a copy renamed over the file, its marker set; xattr: each
	 * write is a single fsetxattr() on the file itself).
	 */
	int (*begin_change)(struct pb_file *f);
	int (*end_change)(struct pb_file *f, int ret);
	/* Give a file without a valid record a new one, f->rec (@p complete). */
	int (*stamp)(struct pb_file *f, const struct pb_params *p);
	/*
	 * Take an old or damaged record out of the way of stamp(): ELF
	 * removes its section; an attribute is left for stamp() to replace
	 * in one write.
	 */
	int (*make_room)(struct pb_file *f);
	/* Write f->rec back in place (planes, counters, threshold, flags). */
	int (*write)(struct pb_file *f);
	/*
	 * Save a learned generation (f->rec, one more run) without a change
	 * of the file's inode, a whole write of its own (no begin_change()):
	 * ELF writes the record slot that is not current, in place, as the
	 * kernel does (elfstore.c); xattr replaces the attribute, as write()
	 * does.  0: written; PB_NONE: not safe or not possible here, nothing
	 * written, *@why says why (the caller then saves by begin_change(),
	 * write(), end_change()); PB_FAIL.  NULL: never in place.
	 */
	int (*save_in_place)(struct pb_file *f, const char **why);
	/* An executable, which gets a plan area by default; NULL: never. */
	bool (*is_program)(const struct pb_file *f);
	/* Adjust a re-stamp's parameters to the store; NULL: nothing to adjust. */
	void (*restamp_params)(const struct pb_file *f, const struct pb_params *given,
			       struct pb_params *p);
	/* Remove the record, a whole change.  PB_NONE: there is none. */
	int (*unstamp)(struct pb_file *f);
	uint64_t (*content_size)(const struct pb_file *f);
	int (*read_original)(struct pb_file *f,
			     int (*sink)(void *ctx, const void *buf, size_t len),
			     void *ctx);
	/* Byte offset of the record in the file; NULL when not in its bytes. */
	uint64_t (*record_offset)(const struct pb_file *f);
	/*
	 * The current slot and where it is, with the section's size; NULL
	 * for a store whose record has one copy.
	 */
	int (*slot)(const struct pb_file *f, uint64_t *slot_offset, uint64_t *section_size);
	/* For `show`: where the record is kept, in words. */
	void (*describe)(const struct pb_file *f, char *buf, size_t size);
};

extern const struct pb_store_ops pb_elf_store;
extern const struct pb_store_ops pb_xattr_store;

struct pb_file {
	const char *path;
	int fd;
	unsigned int open_flags;
	struct stat st;			/* at open time */
	enum pb_kind kind;		/* pb_open() picks @store by it */
	const struct pb_store_ops *store; /* set by pb_open() */
	bool has_record;		/* a valid record was loaded into @rec */
	bool interrupted;		/* ELF: a stamp was interrupted; repairable */
	const char *damage;		/* why an existing record is unusable */
	enum pb_marker_state marker;	/* ELF, unless probing */
	const char *marker_why;		/* PB_MARKER_STALE: what is wrong */
	struct pb_record rec;
	struct pb_elf *elf;		/* ELF details, NULL for data files */
	struct pb_replace *rep;		/* ELF: a change in progress; @fd is then a
					 * private copy of the file (replace.c) */
	bool saved_in_place;		/* pb_save_learned() kept the inode */
	const char *copy_why;		/* else why it could not (NULL: not saved) */
};

/*
 * Open @path and find out what it is: ELF executable or library (sets up
 * f->elf) or other regular file.  Refuses directories, FIFOs, devices and
 * (unless PB_OPEN_FOLLOW) symlinks.  With PB_OPEN_WRITE, takes the writers'
 * lock (an exclusive flock, see docs/FORMAT.md) on the file the name leads to
 * once locked, and refuses files that must not be modified (IMA-signed,
 * fs-verity, immutable, append-only, read-only fs, not writable by the
 * caller; locked by another process too long) with PB_SKIPPED.  Then loads
 * the record if the file has one.  Returns 0, PB_FAIL, PB_SKIPPED or PB_NONE (only with
 * PB_OPEN_QUIET/PB_OPEN_ELF_ONLY, for files that are silently not handled).
 */
int pb_open(struct pb_file *f, const char *path, unsigned int flags);
/*
 * pb_open() of @path only if it leads to the file @dev:@ino, known from
 * before (a learned run's faults): a name in another user's directory may
 * lead elsewhere by now (the directory swapped for a link to /etc), and a
 * writer running as root must read nothing of that file, its ELF header
 * or attribute included.  PB_NONE, silently, with errno ESTALE, when it is
 * another file.
 */
int pb_open_same(struct pb_file *f, const char *path, unsigned int flags, dev_t dev, ino_t ino);
void pb_close(struct pb_file *f);

/* Add a record (or re-stamp with new geometry, keeping learned planes). */
int pb_stamp(struct pb_file *f, const struct pb_params *p);
/*
 * The plan area a file gets without --plan-size: PB_DEFAULT_PLAN_SIZE for
 * an ELF executable (pb_elf_is_program()), else 0.
 */
size_t pb_default_plan_size(const struct pb_file *f);
/*
 * The plan area pb_stamp() gives @f with @p: --plan-size when given; else
 * the area its record has, never less; else pb_default_plan_size().
 */
size_t pb_plan_size_for(const struct pb_file *f, const struct pb_params *p);
/* Remove the record; an ELF file becomes byte-identical to the original. */
int pb_unstamp(struct pb_file *f);
/* Write f->rec back in place (planes and counters only); reseals it. */
int pb_save(struct pb_file *f);
/*
 * Save a learned generation (pb_shift_in() done): through the store's
 * save_in_place() when it can (the file keeps its inode: start-up plans
 * naming it stay valid), else as pb_save() does (an ELF file: a copy
 * renamed over it), saying why with -v.  Sets f->saved_in_place, or
 * f->copy_why.  0 or pb_save()'s error.
 */
int pb_save_learned(struct pb_file *f);
/* Size of the original (un-stamped) content. */
uint64_t pb_content_size(const struct pb_file *f);
/*
 * Produce the original, un-stamped bytes of the file, in order, through
 * @sink.  @sink returns 0 to go on, nonzero to stop (returned as PB_FAIL).
 */
int pb_read_original(struct pb_file *f,
		     int (*sink)(void *ctx, const void *buf, size_t len),
		     void *ctx);
/*
 * Lowercase hex digest of the original bytes (as pb_read_original() gives
 * them), with @algo one of md5, sha1, sha224, sha256, sha384, sha512
 * (another is an error).  @hex holds PB_DIGEST_HEX_MAX bytes.  0 or PB_FAIL.
 */
#define PB_DIGEST_HEX_MAX	(2 * 64 + 1)
int pb_digest_original(struct pb_file *f, const char *algo, char *hex);
/* The same of @len bytes at @buf; errors name @path. */
int pb_digest_buffer(const char *path, const void *buf, size_t len, const char *algo, char *hex);

/*
 * Changing an ELF file (replace.c).  pb_stage() makes f->fd a private copy
 * of the locked file, in its directory (PB_SKIPPED for a file with other
 * hard links, unless PB_OPEN_BREAK_LINKS); the change is then written to
 * the copy; pb_commit() gives it the file's owner, mode, extended
 * attributes and times, syncs it and exchanges it with the file (the lock
 * moves to the copy, f->fd stays the file's); pb_discard() drops it.
 */
int pb_stage(struct pb_file *f);
int pb_commit(struct pb_file *f);
void pb_discard(struct pb_file *f);
/*
 * Take the writers' lock on f->fd (shared with PB_OPEN_SHARED_LOCK, for a
 * reader), waiting at most PBITMAP_LOCK_TIMEOUT seconds.  0: locked, and f->path still leads to the file; 1: locked but
 * the name now leads to another file (open it again); PB_FAIL; PB_SKIPPED.
 */
int pb_lock_current(struct pb_file *f);

/* ELF-specific (elfstore.c) */
int pb_elf_inspect(struct pb_file *f);
void pb_elf_free(struct pb_file *f);
int pb_elf_stamp(struct pb_file *f, const struct pb_params *p);
int pb_elf_unstamp(struct pb_file *f);
int pb_elf_save(struct pb_file *f);
/* The store's save_in_place(): the slot that is not current (elfstore.c). */
int pb_elf_save_in_place(struct pb_file *f, const char **why);
int pb_elf_read_original(struct pb_file *f,
			 int (*sink)(void *ctx, const void *buf, size_t len),
			 void *ctx);
/* Has a .pbitmap section (valid or not). */
bool pb_elf_is_stamped(const struct pb_file *f);
/* ET_EXEC, or ET_DYN with PT_INTERP and DF_1_PIE: an executable, not a library. */
bool pb_elf_is_program(const struct pb_file *f);
uint64_t pb_elf_content_size(const struct pb_file *f);
uint64_t pb_elf_record_offset(const struct pb_file *f);
int pb_elf_slot(const struct pb_file *f, uint64_t *slot_offset, uint64_t *section_size);
/* The learning policy of a record's flags, as `show` names it. */
const char *pb_learn_policy(uint32_t flags);
/*
 * Run pb_elf_inspect() on a memory file holding @buf (the fuzz target's
 * entry).  Returns NULL when acceptable, else a reason.  Messages go through
 * pb_error(), which the fuzz target defines silently.
 */
const char *pb_elf_check_memory(const void *buf, size_t size);

/*
 * The marker a file in f's state must carry (a valid stamp: the section's
 * offset and size, the file's size): true and *@m filled, else false.
 */
bool pb_elf_marker_want(const struct pb_file *f, struct pbitmap_marker *m);

/* The marker of a stamped ELF file (marker.c) */
void pb_marker_make(struct pbitmap_marker *m, uint64_t record_offset,
		    uint32_t record_size, uint64_t file_size);
/*
 * Check an attribute value as the marker @want (NULL: only its own
 * fields).  NULL when it is exactly that marker, else a reason for humans.
 * Pure function of its input: the fuzz target calls it on arbitrary bytes.
 */
const char *pb_marker_check(const void *val, size_t len, const struct pbitmap_marker *want);
/* Does an attribute value start with the marker's magic? */
bool pb_marker_is_one(const void *val, size_t len);
/* Whether an attribute value is a data file's record (PBXZ), by its magic. */
bool pb_attr_is_record(const void *val, size_t len);
/*
 * The record of the stamped ELF file open as @fd (@st its fstat()) into
 * @r, found through its marker: one attribute look-up and one read, no
 * ELF parsing, checked as the kernel checks it (pbitmap_record_valid():
 * the marker, a valid slot, and a header that agrees with the marker and
 * the file's size), so that a crafted file costs no more here than in the
 * kernel.  For the LD_AUDIT module and pbitmapd, which read records on a
 * program's start-up path.  NULL, or why not.
 */
const char *pb_marker_record(int fd, const struct stat *st, struct pb_record *r);
/*
 * The same, with the marker @val (@len bytes) read already: pbitmapd reads
 * it with its privileges, and the rest (the record's slots, its
 * decompression) as the exec'ing user, who may run a program they may
 * not read.
 */
const char *pb_marker_record_at(int fd, const struct stat *st, const void *val, size_t len,
				struct pb_record *r);
/* Read f->fd's marker and set f->marker and f->marker_why against @want
 * (NULL: the file is not stamped, and should carry none). */
void pb_marker_load(struct pb_file *f, const struct pbitmap_marker *want);
/* Set f->fd's marker to @want, or remove it (@want NULL).  0 or PB_FAIL;
 * a filesystem without user attributes gets the warning below and 0. */
int pb_marker_write(struct pb_file *f, const struct pbitmap_marker *want);
/* "cannot set the user.pbitmap marker (...): the kernel will not prefetch it" */
void pb_marker_warn_unsupported(const struct pb_file *f);
/* "ok", "missing", "stale", "unsupported", "stray", "none": show's words. */
const char *pb_marker_state_name(enum pb_marker_state s);

/* Data files (xattrstore.c) */
#define PB_XATTR_MAX_DEFAULT	3584
int pb_xattr_load(struct pb_file *f);
int pb_xattr_stamp(struct pb_file *f, const struct pb_params *p);
int pb_xattr_unstamp(struct pb_file *f);
int pb_xattr_save(struct pb_file *f);
/* Granule shift so that a worst-case compressed record fits in @xattr_max. */
unsigned int pb_xattr_page_shift(uint64_t content_size, unsigned int nr_planes,
				 size_t xattr_max);
/* Decode an xattr value into @r (used by the fuzz target). */
const char *pb_xattr_decode(const void *val, size_t len, struct pb_record *r);

/* ---- a start-up plan from files (planfiles.c) ---------------------------- */

/* A file to plan: pb_plan_fill(). */
struct pb_plan_src {
	const char *path;
	/*
	 * What to read of a file without a bitmap: these ranges (plan units,
	 * sorted, disjoint; clipped to the file's size), or all of it when
	 * NULL.  A file with a bitmap is read where its bitmap marks.
	 */
	const struct pb_plan_range *ranges;
	size_t nr_ranges;
	/* Nonzero: the file @path must lead to (else it is not planned). */
	dev_t dev;
	ino_t ino;
};

/* Flags of pb_plan_fill(). */
#define PB_PLAN_RESOLVE	(1u << 0)	/* make each path absolute and free of symbolic
					 * links (realpath(3)); else each must be so */
#define PB_PLAN_LEAVE_OUT (1u << 1)	/* a file that cannot be planned, or has nothing
					 * to read, is left out (said with -v), as is a
					 * second entry for a file and any past the most
					 * a plan holds; else each is an error */

/* What pb_plan_fill() planned. */
struct pb_plan_stats {
	size_t files;		/* files in the plan */
	size_t units;		/* plan units (4 KiB) its ranges cover */
	size_t used, area;	/* bytes of the plan (or that it would take), of the area */
};

/*
 * Write a plan of the files @src[@nr], in that order, into the plan area
 * of @prog (opened with PB_OPEN_WRITE, its area not empty; the caller
 * saves it).  Each file's identity as it is now, and its ranges (struct
 * pb_plan_src).  0, or PB_FAIL, said, the area as it was.
 */
int pb_plan_fill(struct pb_file *prog, const struct pb_plan_src *src, size_t nr,
		 unsigned int flags, struct pb_plan_stats *stats);

/* ---- learning and prefetching (observe.c, prefetch.c) ------------------ */

/*
 * A sparse set of page indices (pageset.c): memory in proportion to the
 * pages in it, not to the highest index.  Zero-initialise, then add.
 */
#define PB_CHUNK_PAGES	4096	/* pages per chunk: 512 bytes of bitmap */

struct pb_page_chunk {
	uint64_t base;		/* first page / PB_CHUNK_PAGES */
	uint64_t bits[PB_CHUNK_PAGES / 64];
};

struct pb_pageset {
	struct pb_page_chunk *chunks;	/* sorted by base */
	size_t nr, cap;
	size_t last;		/* chunk of the last addition: runs come in order */
};

/* Add @page.  0, or PB_FAIL with errno set (out of memory). */
int pb_pageset_add(struct pb_pageset *s, uint64_t page);
/* The smallest page >= @from in the set, in *@page; false if none. */
bool pb_pageset_next(const struct pb_pageset *s, uint64_t from, uint64_t *page);
uint64_t pb_pageset_count(const struct pb_pageset *s);
void pb_pageset_free(struct pb_pageset *s);

/*
 * Make @pages (indices of @page_size-byte pages of the file) the newest
 * generation of @f's record, opened with PB_OPEN_WRITE, and save it with
 * pb_save_learned() (generation.c: in place where it can, the inode kept);
 * *@marked: the granules set.  0 or pb_save()'s error.
 */
int pb_learn_generation(struct pb_file *f, const struct pb_pageset *pages, uint64_t page_size,
			uint64_t *marked);
/*
 * The first half of it: @pages made the newest generation of f->rec, not
 * saved (pbitmapd then puts a plan into the program's area: one save for
 * both).  0 or PB_FAIL.
 */
int pb_learn_shift_in(struct pb_file *f, const struct pb_pageset *pages, uint64_t page_size,
		      uint64_t *marked);

/*
 * System calls that take file pages out of an address space (tracee.c):
 * munmap, mremap, execve(at), mmap with MAP_FIXED, madvise(DONTNEED,
 * REMOVE, PAGEOUT, DONTNEED_LOCKED); with @file_mmaps, every mmap of a
 * file too (its new mapping is to be registered, see below).
 */
bool pb_drops_pages(long nr, const uint64_t *args, bool file_mmaps);
/*
 * The system call @nr of architecture @arch (AUDIT_ARCH_*, as
 * PTRACE_GET_SYSCALL_INFO gives it) under the tracer's own number, for the
 * calls above (an i386 program's munmap is SYS_munmap); -1 for a call of
 * another architecture that is none of them.
 */
long pb_syscall_as_native(uint32_t arch, long nr);
/* Install, in the calling process, a seccomp filter that makes exactly
 * those system calls stop for the tracer (SECCOMP_RET_TRACE).  0 or PB_FAIL. */
int pb_install_unmap_filter(bool file_mmaps);
/* Can this kernel stop a tracee by seccomp filter (SECCOMP_RET_TRACE)? */
bool pb_unmap_filter_available(void);
/* Can this kernel turn fault-around off in a mapping (userfaultfd, WP_ASYNC)? */
bool pb_fault_around_can_be_off(void);
/*
 * Make the tracee @tid (of process @tgid), in a syscall-exit-stop, create a
 * userfaultfd; return the tracer's copy (the tracee's is closed), its
 * registers restored.  PB_FAIL: not possible, the tracee still in its stop;
 * PB_NONE: it stopped for something else meanwhile, *@status says what.
 */
int pb_tracee_userfaultfd(pid_t tid, pid_t tgid, int *status);
/* Turn fault-around off in [start, end) of the tracee's file mappings. */
void pb_uffd_register(int uffd, uint64_t start, uint64_t end);


/*
 * `add --stdin --summary` with default parameters on the lines of @in, each
 * taken only if it starts with one of @prefixes (NULL: all) and looked up
 * below @root (NULL: /).  With @prefixes, a line that is not an absolute
 * path is a message from rpm and reported as an error.  Prints the summary
 * line; returns an exit code (PB_EXIT_*).  main.c.
 */
int pb_stamp_lines(FILE *in, const char *root, char *const *prefixes);

/* ---- rpm (rpm.c) ------------------------------------------------------- */

/* `pbitmap stamp --rpm PKG... | --rpm-all` */
int pb_cmd_stamp(int argc, char **argv);
/* `pbitmap rpm-verify [PKG...|-a]` */
int pb_cmd_rpm_verify(int argc, char **argv);

int pb_cmd_record(int argc, char **argv);
int pb_cmd_prefetch(int argc, char **argv);
int pb_cmd_status(int argc, char **argv);
int pb_cmd_device_gap(int argc, char **argv);
/* Where pbitmapd keeps its counters, and `pbitmap status` reads them. */
#define PB_DAEMON_STATUS	"/run/pbitmapd/status"
/* What pbitmapd keeps across boots (its metadata lists). */
#define PB_DAEMON_STATE	"/var/lib/pbitmapd"
/*
 * What `pbitmap device-gap --set` measured at boot, for pbitmapd: one line
 * "KIB MAJ:MIN\n" in PB_RUN_DIR/PB_DEVICE_GAP_FILE, KIB the value -q prints
 * (the join gap in KiB, or -1: the kernel's model stands), MAJ:MIN the
 * device measured.  PBITMAP_RUNDIR replaces the directory (for tests).
 */
#define PB_RUN_DIR		"/run/pbitmap"
#define PB_DEVICE_GAP_FILE	"device-gap"
/*
 * The widest gap device-gap writes, where a request costs more than twice
 * the kernel's model (cmd-gap.c says why 1024); pbitmapd refuses a wider
 * value in the file as one device-gap never wrote.
 */
#define PB_DEVICE_GAP_WIDEST_KB	1024
static inline const char *pb_run_dir(void)
{
	const char *dir = getenv("PBITMAP_RUNDIR");

	return dir && *dir ? dir : PB_RUN_DIR;
}
int pb_cmd_run(int argc, char **argv);

/*
 * Marked ranges closer than this are read as one: a read request costs
 * more than the few pages of a short gap (`record` learns page by page,
 * with no fault-around chunks to join neighbours).  Fault-around's
 * default window.
 */
#define PB_WILLNEED_GAP		(64 * 1024)

/*
 * Issue asynchronous readahead for every granule marked for prefetch in
 * the open file's record, ranges wholly cached left out once
 * pb_willneed_set_skip_cached(true) was called (pb_cached_whole()), ranges
 * less than @gap bytes apart joined into
 * one extent, in file order until the next would pass @limit bytes (0:
 * no limit).  Does not wait for I/O.  Stores the number of extents and
 * bytes requested when the pointers are non-NULL.  Returns 0 or PB_FAIL.
 */
int pb_prefetch_file(struct pb_file *f, uint64_t gap, uint64_t limit, uint64_t *extents,
		     uint64_t *bytes);
/*
 * The same for record @r of the file open as @fd, whose content is
 * @content bytes (willneed.c): no pb_file, no messages, for the LD_AUDIT
 * module; with the marked bytes left out as cached in *@cached, when
 * non-NULL.  Returns 0 or an errno value.
 */
int pb_willneed(int fd, const struct pb_record *r, uint64_t content, uint64_t gap,
		uint64_t limit, uint64_t *extents, uint64_t *bytes, uint64_t *cached);
/*
 * Whether ranges of the file open as @fd are wholly in the page cache
 * (willneed.c, cachestat(2)): pb_cached_probe() asks once about
 * [@off, @end), whether any page of it is cached and whether all are, and
 * pb_cached_whole() then about a range within it (no question when all
 * are, or none), counting in @left the bytes it found cached; false
 * wherever the kernel cannot say, and always until
 * pb_willneed_set_skip_cached(true).
 */
struct pb_cached {
	int fd;
	bool any, all;
	uint64_t page;
	uint64_t left;	/* bytes of ranges found wholly cached: left out */
};
void pb_cached_probe(int fd, uint64_t off, uint64_t end, struct pb_cached *c);
bool pb_cached_whole(struct pb_cached *c, uint64_t off, uint64_t end);
/* Whether pb_cached_probe() asks at all: off (every range read) until set. */
void pb_willneed_set_skip_cached(bool on);
/*
 * Ranges of one file joined across a gap, in file order (willneed.c): a
 * range that starts less than @gap bytes after the open one ends extends
 * it.  pb_join_add() returns true when its range closed the open one,
 * stored in *@closed; pb_join_end() closes the last.  A range that starts
 * before the open one ends (plans are checked canonical before: none
 * does) is not joined.
 */
/* The rule: a range at @off joins one that ends at @end (pb_plan_runs() too). */
static inline bool pb_joins(uint64_t end, uint64_t off, uint64_t gap)
{
	return off >= end && off - end < gap;
}
struct pb_extent {	/* [off, end), in bytes */
	uint64_t off, end;
};
struct pb_join {
	uint64_t gap, off, end;	/* the open range: empty (off == end) at first */
};
bool pb_join_add(struct pb_join *j, uint64_t off, uint64_t end, struct pb_extent *closed);
bool pb_join_end(struct pb_join *j, struct pb_extent *closed);
/*
 * posix_fadvise(POSIX_FADV_WILLNEED) of @len bytes at @off of @fd in calls
 * of at most @chunk bytes (pb_willneed_chunk()): the kernel reads no more
 * of one call.  Returns 0 or an errno value.
 */
int pb_willneed_range(int fd, uint64_t off, uint64_t len, uint64_t chunk);
/*
 * The most one POSIX_FADV_WILLNEED reads of a file on device @dev
 * (willneed.c): from the table pb_willneed_use_table() gave, if one was
 * given, else from sysfs (the last device's answer kept).
 */
uint64_t pb_willneed_chunk(dev_t dev);
#define PB_WILLNEED_CHUNK_DEFAULT	(2 * 1024 * 1024)	/* the reach unknown: willneed.c */
/* The chunk of block device @dev, from sysfs, now. */
uint64_t pb_willneed_chunk_of_device(dev_t dev);
/*
 * Whether the kernel's read-ahead window on block device @dev is at least
 * its largest request (willneed.c: a program's own faults then read in
 * requests as large as ours), from sysfs, now; and as the table says.
 */
bool pb_window_wide_of_device(dev_t dev);
bool pb_window_wide(dev_t dev);
/* What to leave to the kernel's read-ahead: nothing, everything, or on wide windows. */
enum pb_leave { PB_LEAVE_NEVER, PB_LEAVE_ALWAYS, PB_LEAVE_WIDE };
/* Whether @rule leaves a file on @dev to the kernel (PB_LEAVE_WIDE: pb_window_wide()). */
bool pb_leaves(enum pb_leave rule, dev_t dev);
/*
 * From now on pb_willneed_chunk() and pb_window_wide() answer @chunks[i]
 * and @wide[i] for a file on @devs[i] (@len entries, kept by the caller;
 * other devices get the default chunk, and not wide) and never read
 * sysfs: pbitmapd, whose children read in other users' roots.
 */
void pb_willneed_use_table(const dev_t *devs, const uint64_t *chunks, const bool *wide,
			   size_t len);
/*
 * The number @name in the sysfs queue directory of block device
 * @maj:@min (a partition's: its disk's), or @dflt.
 */
unsigned long long pb_queue_value(unsigned int maj, unsigned int min, const char *name,
				  unsigned long long dflt);

/*
 * pbitmapd: what an exec of a stamped program reads (prefetch.c).  The
 * caller has entered the exec'ing task's root and taken its credentials,
 * and confined look-ups to local filesystems (pb_confine_local()).
 */
struct pb_exec_prefetch {
	uint64_t gap;		/* join ranges less than this many bytes apart */
	uint64_t budget;	/* read at most about this many bytes */
	int exe_entry;		/* its plan's entry naming the executable
				 * (pb_exec_plan_entry()), -1: none */
	bool exe_to_kernel;	/* the executable's pages left to the kernel's
				 * read-ahead: its plan skips @exe_entry's runs */
	bool libs_to_kernel;	/* without a plan, the libraries' pages too:
				 * pb_exec_rest() reads nothing */
	bool plan_to_kernel;	/* with a plan, the files it lists too */
	/*
	 * the stamped data files it lists: read, left to the kernel (their
	 * open reads them or not), or left where their device's read-ahead
	 * window is as wide as its largest request (pb_window_wide())
	 */
	enum pb_leave data_to_kernel;
	/* what was done */
	bool plan;		/* the executable's plan was followed */
	bool exe_planned;	/* and read every run of @exe_entry */
	bool libs_left;		/* no plan: the libraries left (@libs_to_kernel) */
	bool plan_left;		/* a plan not followed: @plan_to_kernel */
	uint64_t data_left;	/* its data files left out: @data_to_kernel */
	uint64_t files, extents, bytes;
	uint64_t cached_bytes;	/* marked bytes left out: cached already (pb_cached_whole()) */
	uint64_t skip_mismatch;	/* a plan's path led to another file */
	uint64_t skip_fs;	/* a look-up would have left the local filesystems */
	uint64_t skip_denied;	/* the task may not read it */
	uint64_t skip_budget;	/* files left out: the budget was spent */
};
/*
 * The entry of the plan in @r, the record of the file open as @fd, that
 * names that file (device, inode, generation, size), when an exec follows
 * the plan; else -1.  Such a plan reads the program's own pages in their
 * place in its order: its caller does not read them first.
 */
int pb_exec_plan_entry(const struct pb_record *r, int fd);
/*
 * The rest of an exec's read-ahead, once the program's own pages are on
 * their way or left to its plan (@p->exe_entry) (its record @r, empty
 * when refused; @st its fstat()), in the task's root with its credentials
 * (@exe: its path there, the kernel's: no link in it): the plan in @r
 * when it has one, else the objects ld.so will map for it, ignoring the
 * environment (the daemon's, not the program's), unless @p->libs_to_kernel
 * (then nothing is read or looked up, @exe included), or, for an exec
 * with a plan, @p->plan_to_kernel (then nothing is read: @p->plan_left).
 * Returns 0, or PB_NONE when @exe no longer leads to that file (not
 * checked when nothing is read).
 */
int pb_exec_rest(const struct pb_record *r, const struct stat *st, const char *exe,
		 struct pb_exec_prefetch *p);

#endif /* PBITMAP_H */
