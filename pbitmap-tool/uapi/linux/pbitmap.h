/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * pbitmap: the on-disk predictive page bitmap.
 *
 * This header is the single definition of the format: the user-space
 * pbitmap tool and the kernel build with the same file, byte for byte.
 * The tool's docs/FORMAT.md explains every field.
 *
 * A record is a struct pbitmap_header followed by nr_planes bit-planes of
 * plane_size bytes each, then, in an executable's record of version 3,
 * plan_size bytes holding its start-up plan (struct pbitmap_plan).  Every
 * multi-byte field is little-endian.  Bit (n % 8) of byte (n / 8) of a
 * plane stands for granule n of the file, i.e. bytes [n << page_shift,
 * (n + 1) << page_shift).  A granule is prefetched when it is set in at
 * least @threshold planes.  Planes form a ring of generations:
 * @newest_plane holds the newest one, the plane before it (modulo
 * nr_planes) the one before that, and so on.
 *
 * Once written, a record never changes size: learning rewrites only the
 * planes, the plan, @newest_plane, @runs, @last_update and @checksum in
 * place.
 *
 * An ELF file's section holds the record twice, in two slots: slot 0 at
 * the section's start, slot 1 at the record's size rounded up to
 * PBITMAP_SLOT_ALIGN; the section is that long plus the record's size.
 * Both slots have the same geometry and say the section's offset in
 * @record_offset.  The current record is the valid slot (checksum and
 * all) with the larger @runs, slot 0 when they are equal.  The kernel
 * writes a new generation into the other slot only, so a write torn by a
 * crash leaves the current slot intact: a reader finds the old generation
 * or the new one, never neither.  The tool writes both slots alike.
 */
#ifndef _UAPI_LINUX_PBITMAP_H
#define _UAPI_LINUX_PBITMAP_H

#include <linux/types.h>

/* "PBMP" as bytes in the file. */
#define PBITMAP_MAGIC			0x504d4250
#define PBITMAP_VERSION			2
/*
 * Version 3 is version 2 with a plan area (@plan_size, reserved and zero
 * in version 2).  Both are read; a record without a plan area is written
 * as version 2, so that readers of version 2 keep reading it.
 */
#define PBITMAP_VERSION_PLAN		3

/*
 * ELF executables and shared libraries carry the record in a
 * non-allocated SHT_PROGBITS section of this name, the last section of
 * the file: an ordinary section to ELF tools and checkers (eu-elflint
 * rejects the types of SHT_LOUSER..SHT_HIUSER).  The kernel does not read
 * section headers: the marker below says where the record is.
 */
#define PBITMAP_SECTION_NAME		".pbitmap"
/* The record starts on a boundary of this size, past every PT_LOAD byte. */
#define PBITMAP_RECORD_ALIGN		4096
/* Slots of an ELF record, and the alignment of slot 1 within the section. */
#define PBITMAP_NR_SLOTS		2
#define PBITMAP_SLOT_ALIGN		512

/* Other regular files carry it, zstd-compressed, in this extended attribute. */
#define PBITMAP_XATTR_NAME		"user.pbitmap"
/* "PBXZ": the xattr value is struct pbitmap_xattr then one zstd frame. */
#define PBITMAP_XATTR_MAGIC		0x5a584250
/*
 * "PBEM": a stamped ELF file also carries PBITMAP_XATTR_NAME, holding only
 * a struct pbitmap_marker.  One attribute lookup, which on local
 * filesystems reads nothing beyond the inode, tells the kernel whether a
 * file is stamped and where its record is; an unstamped library costs no
 * read.  The section stays the durable copy: a file that lost its marker
 * (copied without attributes) is simply not prefetched.
 */
#define PBITMAP_MARKER_MAGIC		0x4d454250

#define PBITMAP_MIN_PAGE_SHIFT		12
#define PBITMAP_MAX_PAGE_SHIFT		30
#define PBITMAP_MAX_PLANES		16
/* Upper bound on header plus planes: 4 MiB covers a 32 GiB file at 4 KiB. */
#define PBITMAP_MAX_RECORD_SIZE		(4U << 20)
/* Planes are whole 64-bit words so they can be used as native bitmaps. */
#define PBITMAP_PLANE_ALIGN		8

/*
 * Whose runs the kernel may learn into this record, as chosen by whoever
 * may write the file (vm.pbitmap_learn is the upper bound): never
 * (PBITMAP_F_NO_LEARN), its owner's runs (neither flag), or every run
 * (PBITMAP_F_LEARN_EVERY; set-id files and files with capabilities still
 * learn only their owner's runs).  At most one of the two is set.
 */
#define PBITMAP_F_NO_LEARN		(1U << 0)
/* The record lives in the PBITMAP_XATTR_NAME attribute, not in an ELF section. */
#define PBITMAP_F_XATTR			(1U << 1)
#define PBITMAP_F_LEARN_EVERY		(1U << 2)
#define PBITMAP_F_ALL			(PBITMAP_F_NO_LEARN | PBITMAP_F_XATTR | \
					 PBITMAP_F_LEARN_EVERY)

/**
 * struct pbitmap_header - the fixed part of a pbitmap record (128 bytes)
 * @magic: PBITMAP_MAGIC
 * @version: PBITMAP_VERSION, or PBITMAP_VERSION_PLAN with a plan area
 * @header_size: sizeof(struct pbitmap_header); plane 0 starts here
 * @checksum: CRC-32 (IEEE 802.3, as zlib's crc32()) of the header with
 *	this field zero, followed by all planes
 * @flags: PBITMAP_F_*
 * @nr_pages: granules covered, DIV_ROUND_UP(@content_size, 1 << @page_shift)
 * @content_size: bytes of file content covered; for ELF the size of the
 *	file before stamping
 * @plane_size: bytes per plane, DIV_ROUND_UP(@nr_pages, 64) * 8
 * @page_shift: log2 of the granule size
 * @nr_planes: number of generations kept (G)
 * @threshold: a granule is prefetched when set in >= @threshold planes
 * @newest_plane: index of the plane holding the newest generation
 * @runs: generations shifted in so far
 * @last_update: seconds since the Epoch of the last shift-in, 0 if never
 * @orig_shoff: ELF undo data: e_shoff before stamping
 * @orig_shnum: ELF undo data: e_shnum before stamping
 * @orig_shstrndx: ELF undo data: e_shstrndx before stamping
 * @reserved0: zero
 * @record_offset: ELF: file offset of the section, slot 0's header, in both
 *	slots; 0 in an xattr
 * @tail_size: ELF: bytes appended after @content_size (padding, record,
 *	.shstrtab copy, section header table); 0 in an xattr
 * @plan_size: bytes of the start-up plan area after the planes, a
 *	multiple of PBITMAP_PLAN_ALIGN; 0 in version 2, in an xattr, and
 *	when the record has no plan area
 * @reserved1: zero
 * @reserved: zero
 */
struct pbitmap_header {
	__le32	magic;
	__le16	version;
	__le16	header_size;
	__le32	checksum;
	__le32	flags;
	__le64	nr_pages;
	__le64	content_size;
	__le32	plane_size;
	__u8	page_shift;
	__u8	nr_planes;
	__u8	threshold;
	__u8	newest_plane;
	__le64	runs;
	__le64	last_update;
	__le64	orig_shoff;
	__le32	orig_shnum;
	__le16	orig_shstrndx;
	__le16	reserved0;
	__le64	record_offset;
	__le64	tail_size;
	__le32	plan_size;
	__le32	reserved1;
	__le64	reserved[4];
};

/**
 * struct pbitmap_xattr - prefix of the PBITMAP_XATTR_NAME value
 * @magic: PBITMAP_XATTR_MAGIC
 * @record_size: size of the record once decompressed
 *
 * One zstd frame holding the record follows.
 */
struct pbitmap_xattr {
	__le32	magic;
	__le32	record_size;
};

/**
 * struct pbitmap_marker - the PBITMAP_XATTR_NAME value of a stamped ELF file
 * @magic: PBITMAP_MARKER_MAGIC
 * @record_size: size of the section, its sh_size: both slots
 * @record_offset: file offset of the record, the section's sh_offset
 * @file_size: size of the stamped file; a marker for another size is stale
 * @checksum: CRC-32 (as @checksum of struct pbitmap_header) of the 32
 *	bytes of this marker with this field zero
 * @reserved: zero
 */
struct pbitmap_marker {
	__le32	magic;
	__le32	record_size;
	__le64	record_offset;
	__le64	file_size;
	__le32	checksum;
	__le32	reserved;
};

/*
 * The start-up plan of an executable: the files its start-up mapped
 * (executable, interpreter, libraries, dlopen()ed modules, data files),
 * each named by an absolute path and identified so that a replaced file
 * is noticed, and the ranges of them it read, in the order it first
 * touched them.  At exec the kernel reads the plan with the executable's
 * record and submits every range in one batch, before the interpreter
 * runs (Documentation/mm/pbitmap.rst, "Start-up plans").
 *
 * The plan area is a struct pbitmap_plan, @nr_files struct
 * pbitmap_plan_file, @nr_steps struct pbitmap_plan_step, with
 * PBITMAP_PLAN_F_ORDER the order table (@nr_steps __le16), then
 * @names_size bytes of NUL-terminated paths, then with PBITMAP_PLAN_F_META
 * zeros up to a multiple of 8 bytes and the metadata table (struct
 * pbitmap_plan_meta and its ranges); @used bytes in all, the rest of the
 * area zero.  An area of zeros is an empty plan.  The record's checksum
 * covers the plan.
 *
 * The steps are canonical: sorted by file, then by start, a file's steps
 * disjoint (the form that bounds what an exec examines).  The order
 * table says in which order their pages were first needed: each step's
 * index once, the step a start-up touched earliest first.  Without it the
 * steps are read in their own order.
 */
#define PBITMAP_PLAN_MAGIC		0x4c504250	/* "PBPL" */
#define PBITMAP_PLAN_ALIGN		8
/* Largest plan area; 256 KiB holds over 1,000 files and 10,000 ranges. */
#define PBITMAP_PLAN_MAX_SIZE		(256U << 10)
#define PBITMAP_PLAN_MAX_FILES		1024
/* Ranges are in units of 4 KiB, whatever the record's granule. */
#define PBITMAP_PLAN_UNIT_SHIFT		12
/* An order table follows the steps. */
#define PBITMAP_PLAN_F_ORDER		(1U << 0)
/* A metadata table follows the names. */
#define PBITMAP_PLAN_F_META		(1U << 1)
#define PBITMAP_PLAN_F_ALL		(PBITMAP_PLAN_F_ORDER | PBITMAP_PLAN_F_META)

/**
 * struct pbitmap_plan - head of a start-up plan (32 bytes)
 * @magic: PBITMAP_PLAN_MAGIC
 * @used: bytes of the plan: this head, the files, the steps, the order
 *	table, the names and the metadata table with the zeros before it
 * @nr_files: entries of the file table, at most PBITMAP_PLAN_MAX_FILES
 * @flags: PBITMAP_PLAN_F_*
 * @nr_steps: ranges, canonical (sorted by file, then start)
 * @names_size: bytes of the paths, the last one NUL
 * @reserved: zero
 */
struct pbitmap_plan {
	__le32	magic;
	__le32	used;
	__le16	nr_files;
	__le16	flags;
	__le32	nr_steps;
	__le32	names_size;
	__le32	reserved[3];
};

/**
 * struct pbitmap_plan_file - a file of the plan and what it was (32 bytes)
 * @ino: inode number
 * @size: file size in bytes
 * @dev: device, as st_dev encodes it (major < 4096: (major << 8) |
 *	(minor & 0xff) | ((minor & ~0xff) << 12))
 * @generation: the inode's generation (FS_IOC_GETVERSION), 0 when the
 *	filesystem has none
 * @name: offset in the names of its absolute path, at most PATH_MAX
 *	bytes with the NUL
 * @reserved: zero
 *
 * A file whose path leads to another inode, device, generation or size
 * than these is skipped: it was replaced since the plan was written.
 */
struct pbitmap_plan_file {
	__le64	ino;
	__le64	size;
	__le32	dev;
	__le32	generation;
	__le32	name;
	__le32	reserved;
};

/**
 * struct pbitmap_plan_step - a range of one file (12 bytes)
 * @start: first 4 KiB unit
 * @nr: units, at least 1; the range ends within the file's @size
 * @file: index in the file table
 * @reserved: zero
 */
struct pbitmap_plan_step {
	__le32	start;
	__le32	nr;
	__le16	file;
	__le16	reserved;
};

/*
 * The order table of a plan with PBITMAP_PLAN_F_ORDER: @nr_steps __le16,
 * each step's index exactly once.  A step takes at least 14 bytes of the
 * area with its entry in the table, so an area holds fewer than 65536
 * steps and 16 bits index them all.
 */
typedef __le16 pbitmap_plan_order_t;

/*
 * The metadata table of a plan with PBITMAP_PLAN_F_META: blocks of the
 * device holding the executable's filesystem that the plan's look-ups
 * read (directories, inodes, extent blocks), in units of 4 KiB
 * (PBITMAP_PLAN_UNIT_SHIFT) from the device's start.  A kernel reads them
 * in one batch before it looks the plan's files up, and only for an
 * executable only root may have written (Documentation/mm/pbitmap.rst,
 * "Metadata blocks").
 */
#define PBITMAP_PLAN_META_MAX_RANGES	512
/* At most 16 MiB of blocks. */
#define PBITMAP_PLAN_META_MAX_UNITS	4096
/* Ranges end below 2^40 units (4 PiB). */
#define PBITMAP_PLAN_META_END		(1ULL << 40)
/* A range not looked up in this many more learned runs drops out. */
#define PBITMAP_PLAN_META_KEEP		3

/**
 * struct pbitmap_plan_meta - head of a plan's metadata table (32 bytes)
 * @dev: the device of the executable's filesystem, as
 *	struct pbitmap_plan_file has it
 * @nr: ranges that follow, 1 to PBITMAP_PLAN_META_MAX_RANGES
 * @uuid: that filesystem's UUID, not all zero: a table made for another
 *	filesystem on the same device number is not used
 * @reserved: zero
 */
struct pbitmap_plan_meta {
	__le32	dev;
	__le32	nr;
	__u8	uuid[16];
	__le64	reserved;
};

/**
 * struct pbitmap_plan_meta_range - blocks of the device (16 bytes)
 * @start: first 4 KiB unit; ranges ascend and are disjoint
 * @nr: units, at least 1; PBITMAP_PLAN_META_MAX_UNITS in all the ranges
 * @age: learned runs since one last looked a block of it up, at most
 *	PBITMAP_PLAN_META_KEEP
 * @reserved: zero
 */
struct pbitmap_plan_meta_range {
	__le64	start;
	__le32	nr;
	__u8	age;
	__u8	reserved[3];
};

#endif /* _UAPI_LINUX_PBITMAP_H */
