// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The pbitmap record in an ELF executable or shared library.
 *
 * Stamping never moves or changes an original byte other than e_shoff and
 * e_shnum in the ELF header.  It appends
 *
 *   [zeros up to PBITMAP_RECORD_ALIGN][record slot 0][zeros][record slot 1]
 *   [.shstrtab + ".pbitmap"]
 *   [section header table: the original headers, .shstrtab's pointing at
 *    the copy, and the .pbitmap header last]
 *
 * so section indices stay valid, and removing the stamp is restoring two
 * header fields and truncating.  The write order makes a kill at any point
 * leave either a complete stamp, or the original ELF (every tool sees the
 * same file) followed by an unreferenced tail that pb_elf_inspect()
 * recognises as an interrupted stamp and the next add or strip removes.
 * (Nothing is restored from such a tail: its bytes are whoever wrote the
 * file's, so they are only ever compared and cut off.)
 *
 * The tool itself now makes every change in a private copy that replace.c
 * renames over the file, so the write order below protects files written
 * in place by earlier versions, and a copy is synced once, before it is
 * published, rather than at each step.  The one exception is a learned
 * generation (pb_elf_save_in_place(), below).
 *
 * The section holds the record twice (include/uapi/linux/pbitmap.h): the
 * tool writes both slots alike when it stamps or changes a record; a
 * learned generation, the kernel's and the tool's (`pbitmap record`,
 * pbitmapd: generation.c), goes into the slot that is not current, in
 * place, with one more run than the current one, so that a crash never
 * tears the one in use and the file keeps its inode.  Reading takes the
 * current slot (pb_slot_current(): the valid one with more runs).
 *
 * libelf reads and checks the file and translates headers to file order;
 * the only bytes written by hand are the ones libelf translated for us.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "pbitmap.h"

struct pb_elf {
	int cls;			/* ELFCLASS32 or ELFCLASS64 */
	GElf_Ehdr ehdr;
	unsigned char raw_ehdr[sizeof(Elf64_Ehdr)]; /* file bytes of the header */
	size_t ehdr_size;		/* sizeof(ElfNN_Ehdr) */
	size_t shnum;
	uint64_t file_size;
	uint64_t extent;		/* end of the furthest ELF structure */
	uint64_t shstrtab_size;		/* bytes of the section name table */
	size_t pb_index;		/* index of .pbitmap, 0 if none */
	GElf_Shdr pb_shdr;
	bool undo_ok;			/* the record's undo data fits the file */
	const char *damage;		/* why an existing record is unusable */
	int slot;			/* the current slot, -1 if none is valid */
	struct pbitmap_header undo;	/* header of the stamp or torn tail */
};

static uint64_t round_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) / align * align;
}

static bool add_overflows(uint64_t a, uint64_t b, uint64_t *sum)
{
	return __builtin_add_overflow(a, b, sum);
}

/* Does [off, off + len) lie within a file of @size bytes? */
static bool in_file(uint64_t off, uint64_t len, uint64_t size)
{
	uint64_t end;

	return !add_overflows(off, len, &end) && end <= size;
}

/*
 * Refuse the file.  A caller only probing for a bitmap (record, run) is
 * told PB_NONE without a message: a file pbitmap could not stamp has none.
 */
__attribute__((format(printf, 2, 3)))
static int reject(struct pb_file *f, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (f->open_flags & PB_OPEN_PROBE)
		return PB_NONE;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return pb_error(f->path, "%s", msg);
}

static int elf_fail(struct pb_file *f, const char *what)
{
	return reject(f, "%s", what);
}

static int libelf_fail(struct pb_file *f, const char *what)
{
	return pb_error(f->path, "%s: %s", what, elf_errmsg(-1));
}

/* All of @len bytes at @off, read (@write false) or written; 0 or -1 (errno). */
static int io_full(int fd, void *buf, size_t len, uint64_t off, bool write)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = write ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	return io_full(fd, buf, len, off, false);
}

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	return io_full(fd, (void *)buf, len, off, true);
}

/* ---- translation through libelf ---------------------------------------- */

/* File-order bytes of @count section headers for the file's class. */
static void *shdrs_to_file(Elf *elf, int cls, const GElf_Shdr *shdrs,
			   size_t count, size_t *size)
{
	size_t ent = cls == ELFCLASS64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	void *mem = calloc(count, ent), *out = calloc(count, ent);
	Elf_Data src = { .d_type = ELF_T_SHDR, .d_version = EV_CURRENT };
	Elf_Data dst = { .d_version = EV_CURRENT };

	if (!mem || !out)
		goto fail;
	for (size_t i = 0; i < count; i++) {
		if (cls == ELFCLASS64) {
			((Elf64_Shdr *)mem)[i] = shdrs[i];
			continue;
		}
		Elf32_Shdr *s = &((Elf32_Shdr *)mem)[i];

		s->sh_name = shdrs[i].sh_name;
		s->sh_type = shdrs[i].sh_type;
		s->sh_flags = (Elf32_Word)shdrs[i].sh_flags;
		s->sh_addr = (Elf32_Addr)shdrs[i].sh_addr;
		s->sh_offset = (Elf32_Off)shdrs[i].sh_offset;
		s->sh_size = (Elf32_Word)shdrs[i].sh_size;
		s->sh_link = shdrs[i].sh_link;
		s->sh_info = shdrs[i].sh_info;
		s->sh_addralign = (Elf32_Word)shdrs[i].sh_addralign;
		s->sh_entsize = (Elf32_Word)shdrs[i].sh_entsize;
	}
	src.d_buf = mem;
	src.d_size = count * ent;
	dst.d_buf = out;
	dst.d_size = count * ent;
	if (!gelf_xlatetof(elf, &dst, &src, ELFDATA2LSB))
		goto fail;
	free(mem);
	*size = count * ent;
	return out;
fail:
	free(mem);
	free(out);
	return NULL;
}

/* File-order bytes of the ELF header with new section table fields. */
static int ehdr_to_file(Elf *elf, int cls, uint64_t shoff, size_t shnum,
			size_t shstrndx, unsigned char *out, size_t *size)
{
	Elf64_Ehdr e64;
	Elf32_Ehdr e32;
	Elf_Data src = { .d_type = ELF_T_EHDR, .d_version = EV_CURRENT };
	Elf_Data dst = { .d_version = EV_CURRENT, .d_buf = out };

	if (cls == ELFCLASS64) {
		Elf64_Ehdr *e = elf64_getehdr(elf);

		if (!e)
			return -1;
		e64 = *e;
		e64.e_shoff = shoff;
		e64.e_shnum = (Elf64_Half)shnum;
		e64.e_shstrndx = (Elf64_Half)shstrndx;
		src.d_buf = &e64;
		src.d_size = sizeof(e64);
	} else {
		Elf32_Ehdr *e = elf32_getehdr(elf);

		if (!e)
			return -1;
		e32 = *e;
		e32.e_shoff = (Elf32_Off)shoff;
		e32.e_shnum = (Elf32_Half)shnum;
		e32.e_shstrndx = (Elf32_Half)shstrndx;
		src.d_buf = &e32;
		src.d_size = sizeof(e32);
	}
	dst.d_size = src.d_size;
	if (!gelf_xlatetof(elf, &dst, &src, ELFDATA2LSB))
		return -1;
	*size = src.d_size;
	return 0;
}

/* ---- inspection --------------------------------------------------------- */

/*
 * ELF_C_READ, not ELF_C_READ_MMAP: libelf then reads only the headers and
 * sections asked for, with pread, so probing a file for its bitmap (as
 * 'run' does right before exec) costs no page faults of its own.
 */
static Elf *begin(const struct pb_file *f)
{
	elf_version(EV_CURRENT);
	return elf_begin(f->fd, ELF_C_READ, NULL);
}

static int check_ident(struct pb_file *f, Elf *elf, struct pb_elf *e)
{
	size_t n;
	const char *ident = elf_getident(elf, &n);

	if (!ident || n < EI_NIDENT)
		return elf_fail(f, "truncated ELF identification");
	e->cls = ident[EI_CLASS];
	if (e->cls != ELFCLASS32 && e->cls != ELFCLASS64)
		return reject(f, "unknown ELF class %d (EI_CLASS must be 1 or 2)", e->cls);
	if (ident[EI_DATA] == ELFDATA2MSB)
		return reject(f, "big-endian ELF files are not supported");
	if (ident[EI_DATA] != ELFDATA2LSB)
		return reject(f, "unknown ELF data encoding %d", ident[EI_DATA]);
	if (ident[EI_VERSION] != EV_CURRENT)
		return reject(f, "unknown ELF version %d", ident[EI_VERSION]);
	return 0;
}

static int check_ehdr(struct pb_file *f, Elf *elf, struct pb_elf *e)
{
	GElf_Ehdr *h = &e->ehdr;
	size_t shent = e->cls == ELFCLASS64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	size_t phent = e->cls == ELFCLASS64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);

	e->ehdr_size = e->cls == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if (e->file_size < e->ehdr_size)
		return elf_fail(f, "truncated ELF header");
	if (!gelf_getehdr(elf, h))
		return libelf_fail(f, "unreadable ELF header");
	/* --stdin: packages hold objects (.o, .ko) that nobody stamps. */
	if (h->e_type != ET_EXEC && h->e_type != ET_DYN && (f->open_flags & PB_OPEN_QUIET))
		return PB_NONE;
	if (h->e_type == ET_REL)
		return elf_fail(f, "relocatable object: pbitmap applies to executables and shared libraries");
	if (h->e_type != ET_EXEC && h->e_type != ET_DYN)
		return elf_fail(f, "not an executable or shared library (ELF type is neither EXEC nor DYN)");
	if (h->e_ehsize < e->ehdr_size)
		return elf_fail(f, "ELF header size too small");
	if (h->e_phnum && (h->e_phentsize != phent ||
			   !in_file(h->e_phoff, (uint64_t)h->e_phnum * phent, e->file_size)))
		return elf_fail(f, "program header table outside the file or malformed");
	if (h->e_shoff == 0 || h->e_shnum == 0) {
		if (h->e_shoff && h->e_shnum == 0)
			return elf_fail(f, "extended section numbering is not supported");
		return elf_fail(f, "no section header table (pbitmap needs one to add a section)");
	}
	if (h->e_shentsize != shent)
		return elf_fail(f, "section header entry size is wrong");
	if (!in_file(h->e_shoff, (uint64_t)h->e_shnum * shent, e->file_size))
		return elf_fail(f, "section header table extends beyond the end of the file");
	if (h->e_shoff < e->ehdr_size)
		return elf_fail(f, "section header table overlaps the ELF header");
	if (h->e_shstrndx == SHN_UNDEF)
		return elf_fail(f, "no section name table");
	if (h->e_shstrndx == SHN_XINDEX)
		return elf_fail(f, "extended section numbering (e_shstrndx is SHN_XINDEX) is not supported");
	if (h->e_shstrndx >= h->e_shnum)
		return elf_fail(f, "section name table index out of range");
	if (h->e_shnum >= SHN_LORESERVE - 1)
		return elf_fail(f, "too many sections for a new one without extended numbering");
	if (elf_getshdrnum(elf, &e->shnum) || e->shnum != h->e_shnum)
		return libelf_fail(f, "unreadable section header table");
	return pread_full(f->fd, e->raw_ehdr, e->ehdr_size, 0) ?
	       pb_error_errno(f->path, "read") : 0;
}

/*
 * The .pbitmap section: SHT_PROGBITS, no flags, and that name (libelf's
 * elf_strptr() checks the name's bounds in the name table).  An ordinary
 * section type, so that ELF checkers accept a stamped file; a section of
 * that name that is not a stamp (made with objcopy --add-section) is then
 * found damaged by its record or undo data, never trusted.
 */
static bool is_pbitmap_section(Elf *elf, const struct pb_elf *e, const GElf_Shdr *s)
{
	const char *name;

	if (s->sh_type != SHT_PROGBITS || s->sh_flags)
		return false;
	name = elf_strptr(elf, e->ehdr.e_shstrndx, s->sh_name);
	return name && !strcmp(name, PBITMAP_SECTION_NAME);
}

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/* Every section and segment lies in the file and none overlaps a table. */
static int check_layout(struct pb_file *f, Elf *elf, struct pb_elf *e)
{
	uint64_t shoff = e->ehdr.e_shoff;
	uint64_t shlen = (uint64_t)e->shnum * e->ehdr.e_shentsize;
	size_t phnum;

	e->extent = shoff + shlen;
	for (size_t i = 1; i < e->shnum; i++) {
		GElf_Shdr s;

		if (!gelf_getshdr(elf_getscn(elf, i), &s))
			return libelf_fail(f, "unreadable section header");
		if (is_pbitmap_section(elf, e, &s)) {
			if (e->pb_index)
				return elf_fail(f, "more than one .pbitmap section");
			e->pb_index = i;
			e->pb_shdr = s;
		}
		if (s.sh_type == SHT_NOBITS || s.sh_size == 0)
			continue;
		if (!in_file(s.sh_offset, s.sh_size, e->file_size))
			return reject(f, "section %zu extends beyond the end of the file", i);
		if (overlaps(s.sh_offset, s.sh_size, shoff, shlen))
			return reject(f, "section %zu overlaps the section header table", i);
		if (s.sh_offset < e->ehdr_size)
			return reject(f, "section %zu overlaps the ELF header", i);
		if (s.sh_offset + s.sh_size > e->extent)
			e->extent = s.sh_offset + s.sh_size;
	}
	if (elf_getphdrnum(elf, &phnum))
		return libelf_fail(f, "unreadable program header table");
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr p;

		if (!gelf_getphdr(elf, (int)i, &p))
			return libelf_fail(f, "unreadable program header");
		if (!in_file(p.p_offset, p.p_filesz, e->file_size))
			return reject(f, "segment %zu extends beyond the end of the file", i);
		if (p.p_offset + p.p_filesz > e->extent)
			e->extent = p.p_offset + p.p_filesz;
	}
	return 0;
}

/*
 * Stamping copies the section name table and appends ".pbitmap" to it, so
 * the table must be bytes in the file (not SHT_NOBITS, not compressed) and
 * a list of names: non-empty and ending with a NUL.  check_layout() has put
 * it inside the file.  Probes skip reading the last byte: they copy nothing.
 */
static int check_shstrtab(struct pb_file *f, Elf *elf, struct pb_elf *e)
{
	GElf_Shdr s;
	unsigned char last;

	if (!gelf_getshdr(elf_getscn(elf, e->ehdr.e_shstrndx), &s))
		return libelf_fail(f, "unreadable section header of the section name table");
	if (s.sh_type == SHT_NOBITS)
		return reject(f, "section name table has no content in the file (SHT_NOBITS)");
	if (s.sh_type != SHT_STRTAB)
		return reject(f, "section name table is not a string table (section type %" PRIu32 ")",
			      (uint32_t)s.sh_type);
	if (s.sh_flags & SHF_COMPRESSED)
		return reject(f, "section name table is compressed (SHF_COMPRESSED)");
	if (s.sh_size == 0)
		return reject(f, "section name table is empty");
	e->shstrtab_size = s.sh_size;
	if (f->open_flags & PB_OPEN_PROBE)
		return 0;
	if (pread_full(f->fd, &last, 1, s.sh_offset + s.sh_size - 1))
		return pb_error_errno(f->path, "read of the section name table");
	if (last != '\0')
		return reject(f, "section name table does not end with a NUL byte");
	return 0;
}

/* Where the tail of a stamp over @content_size bytes puts each part. */
struct tail_layout {
	uint64_t record_offset;
	uint64_t strtab_offset;
	uint64_t strtab_size;
	uint64_t shdr_offset;
	uint64_t shdr_size;
	uint64_t end;
};

static void plan_tail(int cls, uint64_t content_size, uint64_t section_size,
		      uint64_t strtab_size, size_t shnum, struct tail_layout *t)
{
	uint64_t align = cls == ELFCLASS64 ? 8 : 4;
	size_t ent = cls == ELFCLASS64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);

	t->record_offset = round_up(content_size, PBITMAP_RECORD_ALIGN);
	t->strtab_offset = t->record_offset + section_size;
	t->strtab_size = strtab_size;
	t->shdr_offset = round_up(t->strtab_offset + strtab_size, align);
	t->shdr_size = (uint64_t)shnum * ent;
	t->end = t->shdr_offset + t->shdr_size;
}

/*
 * Does the undo data of a stamp describe this file?  The record, the
 * section headers and the file size must all be where stamping put them.
 */
static bool stamp_consistent(const struct pb_elf *e, const struct pbitmap_header *h)
{
	uint64_t content = le64toh(h->content_size);
	uint64_t roff = le64toh(h->record_offset);
	uint64_t tail = le64toh(h->tail_size);
	uint64_t end;

	return roff == e->pb_shdr.sh_offset &&
	       roff == round_up(content, PBITMAP_RECORD_ALIGN) &&
	       !add_overflows(content, tail, &end) && end == e->file_size &&
	       e->ehdr.e_shnum == le32toh(h->orig_shnum) + 1 &&
	       e->pb_index == e->shnum - 1 &&
	       le64toh(h->orig_shoff) + (uint64_t)le32toh(h->orig_shnum) *
			e->ehdr.e_shentsize <= content &&
	       le16toh(h->orig_shstrndx) == e->ehdr.e_shstrndx &&
	       e->ehdr.e_shoff + (uint64_t)e->shnum * e->ehdr.e_shentsize == end;
}

/* The fields of a section header in file order (little-endian, checked). */
static void raw_shdr(int cls, const unsigned char *raw, GElf_Shdr *s)
{
	if (cls == ELFCLASS64) {
		Elf64_Shdr h;

		memcpy(&h, raw, sizeof(h));
		s->sh_type = le32toh(h.sh_type);
		s->sh_flags = le64toh(h.sh_flags);
		s->sh_offset = le64toh(h.sh_offset);
		s->sh_size = le64toh(h.sh_size);
	} else {
		Elf32_Shdr h;

		memcpy(&h, raw, sizeof(h));
		s->sh_type = le32toh(h.sh_type);
		s->sh_flags = le32toh(h.sh_flags);
		s->sh_offset = le32toh(h.sh_offset);
		s->sh_size = le32toh(h.sh_size);
	}
}

/*
 * Is the file the undo data describes one pbitmap could have stamped?  The
 * stamp left the original section header table in place and copied it,
 * changing only the entry of the section name table, so the two must match
 * entry for entry: this catches a damaged orig_shoff, which
 * stamp_consistent() can only bound and strip would write into the header.
 * The original must also pass the checks add makes (check_ehdr(),
 * check_layout(), check_shstrtab()) where they differ from the stamped
 * file's: its name table, its table's place, every section and segment
 * within the original content and off both tables.  Else undoing gives a
 * file add refuses (and a replacement of a damaged record would end half
 * done).  1 yes, 0 no, PB_FAIL.
 */
static int original_ok(struct pb_file *f, Elf *elf, const struct pb_elf *e,
		       const struct pbitmap_header *h)
{
	uint64_t content = le64toh(h->content_size);
	size_t ent = e->ehdr.e_shentsize, n = le32toh(h->orig_shnum);
	size_t len = n * ent, strndx = e->ehdr.e_shstrndx, phnum;
	uint64_t orig_shoff = le64toh(h->orig_shoff);
	unsigned char *orig = malloc(len), *copy = malloc(len), last;
	GElf_Shdr s;
	int ret = strndx < n && orig_shoff >= e->ehdr_size;

	if (!orig || !copy)
		ret = pb_error_errno(f->path, "malloc");
	else if (ret && (pread_full(f->fd, orig, len, orig_shoff) ||
			 pread_full(f->fd, copy, len, e->ehdr.e_shoff)))
		ret = pb_error_errno(f->path, "read of the section header tables");
	for (size_t i = 0; ret == 1 && i < n; i++)
		if (i != strndx && memcmp(orig + i * ent, copy + i * ent, ent))
			ret = 0;
	if (ret == 1) {
		raw_shdr(e->cls, orig + strndx * ent, &s);
		if (s.sh_type != SHT_STRTAB || (s.sh_flags & SHF_COMPRESSED) || s.sh_size == 0 ||
		    !in_file(s.sh_offset, s.sh_size, content))
			ret = 0;
		else if (pread_full(f->fd, &last, 1, s.sh_offset + s.sh_size - 1))
			ret = pb_error_errno(f->path, "read of the section name table");
		else if (last != '\0')
			ret = 0;
	}
	/* check_layout() on the original: entries but the name table's are the current ones. */
	for (size_t i = 1; ret == 1 && i < n; i++) {
		if (i == strndx)
			raw_shdr(e->cls, orig + strndx * ent, &s);
		else if (!gelf_getshdr(elf_getscn(elf, i), &s))
			ret = libelf_fail(f, "unreadable section header");
		if (ret == 1 && s.sh_type != SHT_NOBITS && s.sh_size &&
		    (!in_file(s.sh_offset, s.sh_size, content) || s.sh_offset < e->ehdr_size ||
		     overlaps(s.sh_offset, s.sh_size, orig_shoff, len)))
			ret = 0;
	}
	if (ret == 1 && elf_getphdrnum(elf, &phnum))
		ret = libelf_fail(f, "unreadable program header table");
	for (size_t i = 0; ret == 1 && i < phnum; i++) {
		GElf_Phdr p;

		if (!gelf_getphdr(elf, (int)i, &p))
			ret = libelf_fail(f, "unreadable program header");
		else if (!in_file(p.p_offset, p.p_filesz, content))
			ret = 0;
	}
	free(orig);
	free(copy);
	return ret;
}

static int load_stamp(struct pb_file *f, Elf *elf, struct pb_elf *e)
{
	uint64_t size = e->pb_shdr.sh_size;
	size_t stride = 0, slot_size;
	const char *why = NULL;
	unsigned char *buf;

	e->slot = -1;
	if (size < sizeof(struct pbitmap_header) ||
	    size > 2 * (uint64_t)PBITMAP_MAX_RECORD_SIZE) {
		e->damage = "section size out of range";
		return 0;
	}
	buf = malloc(size);
	if (!buf)
		return pb_error_errno(f->path, "malloc");
	if (pread_full(f->fd, buf, size, e->pb_shdr.sh_offset)) {
		free(buf);
		return pb_error_errno(f->path, "read of the .pbitmap section");
	}
	e->slot = pb_slot_current(buf, size, &why);
	slot_size = pb_slot_size(size, &stride);
	/* The undo data of the current slot, else of slot 0 (both say the same). */
	memcpy(&e->undo, buf + (e->slot > 0 ? stride : 0), sizeof(e->undo));
	e->undo_ok = le32toh(e->undo.magic) == PBITMAP_MAGIC &&
		     stamp_consistent(e, &e->undo);
	/* Probes never undo: they skip reading the tables. */
	if (e->undo_ok && !(f->open_flags & PB_OPEN_PROBE)) {
		int match = original_ok(f, elf, e, &e->undo);

		if (match < 0) {
			free(buf);
			return PB_FAIL;
		}
		e->undo_ok = match;
	}
	e->damage = why;
	if (!e->damage && le32toh(e->undo.flags) & PBITMAP_F_XATTR)
		e->damage = "record is marked as an xattr record";
	if (!e->damage && !e->undo_ok)
		e->damage = "the file was changed after stamping (another tool rewrote it)";
	if (e->damage) {
		free(buf);
		return 0;
	}
	if (e->slot > 0)
		memmove(buf, buf + stride, slot_size);
	f->rec.buf = buf;
	f->rec.size = slot_size;
	f->has_record = true;
	return 0;
}

/*
 * Where a stamp of @content bytes with this geometry, interrupted at one of
 * its steps, left the end of the file: right after the record (killed once
 * the record was written) or after the whole tail (killed before the header
 * switch, or a strip killed after restoring the header).  UINT64_MAX when
 * no record has this geometry.  Never decreases as @content grows.
 */
static uint64_t torn_end(const struct pb_elf *e, uint64_t content, unsigned int shift,
			 unsigned int planes, bool whole)
{
	size_t record_size = pb_record_size(content, shift, planes);
	struct tail_layout t;

	if (!record_size)
		return UINT64_MAX;
	plan_tail(e->cls, content, pb_section_size(record_size),
		  e->shstrtab_size + sizeof(PBITMAP_SECTION_NAME), e->shnum + 1, &t);
	return whole ? t.end : t.record_offset + pb_section_size(record_size);
}

/* The record header of an interrupted stamp at @off, if there is one. */
static bool torn_record_at(struct pb_file *f, struct pb_elf *e, uint64_t off)
{
	struct pbitmap_header h;
	uint64_t content;

	if (pread_full(f->fd, &h, sizeof(h), off))
		return false;
	content = le64toh(h.content_size);
	if (le32toh(h.magic) != PBITMAP_MAGIC || le64toh(h.record_offset) != off ||
	    content < e->extent || round_up(content, PBITMAP_RECORD_ALIGN) != off ||
	    le64toh(h.orig_shoff) != e->ehdr.e_shoff ||
	    le32toh(h.orig_shnum) != e->ehdr.e_shnum ||
	    le16toh(h.orig_shstrndx) != e->ehdr.e_shstrndx ||
	    h.page_shift < PBITMAP_MIN_PAGE_SHIFT || h.page_shift > PBITMAP_MAX_PAGE_SHIFT ||
	    h.nr_planes < 1 || h.nr_planes > PBITMAP_MAX_PLANES)
		return false;
	/* The tail this record describes ends the file. */
	if (torn_end(e, content, h.page_shift, h.nr_planes, false) != e->file_size &&
	    torn_end(e, content, h.page_shift, h.nr_planes, true) != e->file_size)
		return false;
	e->undo = h;
	return true;
}

/*
 * The record offset R (a multiple of PBITMAP_RECORD_ALIGN) of an
 * interrupted stamp with this geometry that ends the file, or 0.  R is the
 * content size rounded up, so the content lies in (R - align, R]: find the
 * lowest R whose largest content reaches the end of the file (torn_end()
 * grows with the content), then see whether a content in its range ends
 * the file exactly.  Over that range the number of granules, so the record
 * size, takes at most two values: those of its two ends.
 */
static uint64_t torn_record_offset(const struct pb_elf *e, unsigned int shift,
				   unsigned int planes, bool whole)
{
	const uint64_t align = PBITMAP_RECORD_ALIGN;
	uint64_t lo = round_up(e->extent, align) / align;	/* in units of align */
	uint64_t hi = e->file_size / align, r, first;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (torn_end(e, mid * align, shift, planes, whole) >= e->file_size)
			hi = mid;
		else
			lo = mid + 1;
	}
	r = lo * align;
	if (r == 0 || r >= e->file_size)
		return 0;
	first = r - align + 1 > e->extent ? r - align + 1 : e->extent;
	if (torn_end(e, first, shift, planes, whole) == e->file_size ||
	    torn_end(e, r, shift, planes, whole) == e->file_size)
		return r;
	return 0;
}

/*
 * An interrupted stamp leaves the original ELF plus an unreferenced tail
 * that begins with a record whose undo data names this very header.  Only
 * files with bytes past their last ELF structure can have one, and where
 * its record starts follows from the end of the file: for each granule
 * size and generation count, the tail a stamp writes has one layout (the
 * copied tables have the sizes of this file's), so there are only a few
 * candidate offsets, each checked with one read.  Probes (record, run,
 * prefetch) only want a valid bitmap and skip the search altogether.
 */
static void find_torn_tail(struct pb_file *f, struct pb_elf *e)
{
	uint64_t seen[2 * (PBITMAP_MAX_PAGE_SHIFT - PBITMAP_MIN_PAGE_SHIFT + 1) *
		      PBITMAP_MAX_PLANES];
	size_t nr_seen = 0;

	if ((f->open_flags & PB_OPEN_PROBE) || e->file_size <= e->extent)
		return;
	for (unsigned int shift = PBITMAP_MIN_PAGE_SHIFT; shift <= PBITMAP_MAX_PAGE_SHIFT; shift++) {
		for (unsigned int planes = 1; planes <= PBITMAP_MAX_PLANES; planes++) {
			for (int whole = 0; whole <= 1; whole++) {
				uint64_t off = torn_record_offset(e, shift, planes, whole);
				size_t i;

				for (i = 0; off && i < nr_seen && seen[i] != off; i++)
					;
				if (!off || i < nr_seen)
					continue;
				seen[nr_seen++] = off;
				if (torn_record_at(f, e, off)) {
					f->interrupted = true;
					return;
				}
			}
		}
	}
}

/*
 * libelf declined a file that starts with the ELF magic.  Say why in terms
 * of the identification bytes, which are all that is known at this point.
 */
static int why_unreadable(struct pb_file *f, const char *libelf_msg)
{
	unsigned char ident[EI_NIDENT];
	uint64_t size = (uint64_t)f->st.st_size;

	if (size < EI_NIDENT || pread_full(f->fd, ident, EI_NIDENT, 0))
		return reject(f, "truncated ELF identification (%" PRIu64 " bytes)", size);
	if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64)
		return reject(f, "unknown ELF class %d (EI_CLASS must be 1 or 2)", ident[EI_CLASS]);
	if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB)
		return reject(f, "unknown ELF data encoding %d", ident[EI_DATA]);
	if (size < (ident[EI_CLASS] == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr)))
		return reject(f, "truncated ELF header (%" PRIu64 " bytes)", size);
	return reject(f, "damaged ELF file (libelf: %s)", libelf_msg ? libelf_msg : "unknown error");
}

int pb_elf_inspect(struct pb_file *f)
{
	struct pb_elf *e;
	Elf *elf;
	int ret;

	elf = begin(f);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		const char *err = elf_errmsg(-1);
		unsigned char magic[SELFMAG];
		bool looks_elf = pread_full(f->fd, magic, SELFMAG, 0) == 0 &&
				 memcmp(magic, ELFMAG, SELFMAG) == 0;

		if (elf)
			elf_end(elf);
		if (!looks_elf)
			return PB_NONE;
		f->kind = PB_KIND_ELF;
		return why_unreadable(f, err);
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		elf_end(elf);
		return pb_error_errno(f->path, "malloc");
	}
	e->file_size = (uint64_t)f->st.st_size;
	f->elf = e;
	f->kind = PB_KIND_ELF;
	ret = check_ident(f, elf, e);
	if (!ret)
		ret = check_ehdr(f, elf, e);
	if (!ret)
		ret = check_layout(f, elf, e);
	if (!ret)
		ret = check_shstrtab(f, elf, e);
	if (!ret && e->pb_index)
		ret = load_stamp(f, elf, e);
	else if (!ret)
		find_torn_tail(f, e);
	f->damage = e->damage;
	elf_end(elf);
	/* Probes only want the bitmap, which the section holds. */
	if (!ret && !(f->open_flags & PB_OPEN_PROBE)) {
		struct pbitmap_marker m;

		pb_marker_load(f, pb_elf_marker_want(f, &m) ? &m : NULL);
	}
	return ret;
}

void pb_elf_free(struct pb_file *f)
{
	free(f->elf);
	f->elf = NULL;
}

bool pb_elf_is_stamped(const struct pb_file *f)
{
	return f->elf && f->elf->pb_index;
}

/*
 * The program headers of @elf: whether there is a PT_INTERP, and the
 * PT_DYNAMIC segment in *@dynamic (p_type PT_NULL when there is none).
 */
static bool find_interp(Elf *elf, GElf_Phdr *dynamic)
{
	bool interp = false;
	size_t n;

	dynamic->p_type = PT_NULL;
	if (elf_getphdrnum(elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr p;

		if (!gelf_getphdr(elf, (int)i, &p))
			return false;
		if (p.p_type == PT_INTERP)
			interp = true;
		else if (p.p_type == PT_DYNAMIC)
			*dynamic = p;
	}
	return interp;
}

/* The first entry tagged @tag of the dynamic segment @dynamic, in *@out. */
static bool dynamic_entry(Elf *elf, const GElf_Phdr *dynamic, int64_t tag, GElf_Dyn *out)
{
	Elf_Data *d;

	if (dynamic->p_type != PT_DYNAMIC || !dynamic->p_filesz)
		return false;
	d = elf_getdata_rawchunk(elf, (int64_t)dynamic->p_offset, dynamic->p_filesz, ELF_T_DYN);
	for (int i = 0; d && gelf_getdyn(d, i, out) && out->d_tag != DT_NULL; i++)
		if (out->d_tag == tag)
			return true;
	return false;
}

/* DF_1_PIE in the DT_FLAGS_1 entry of the dynamic segment @dynamic. */
static bool flagged_pie(Elf *elf, const GElf_Phdr *dynamic)
{
	GElf_Dyn dyn;

	return dynamic_entry(elf, dynamic, DT_FLAGS_1, &dyn) && (dyn.d_un.d_val & DF_1_PIE);
}

/*
 * Which ELF files get a start-up plan area by default: executables, that
 * is ET_EXEC, or ET_DYN with a PT_INTERP program header AND DF_1_PIE set in
 * DT_FLAGS_1 of its dynamic segment (a PIE).  Shared libraries are ET_DYN
 * without DF_1_PIE, even those with a PT_INTERP so that they can be run
 * (Debian 12's libc.so.6, which prints its version); so is the dynamic
 * loader (no PT_INTERP); a static PIE (no PT_INTERP) gets none either.
 * Anything libelf cannot read here counts as no executable.
 */
bool pb_elf_is_program(const struct pb_file *f)
{
	Elf *elf = begin(f);
	GElf_Phdr dynamic;
	GElf_Ehdr h;
	bool program = false;

	if (!elf)
		return false;
	if (gelf_getehdr(elf, &h))
		program = h.e_type == ET_EXEC ||
			  (h.e_type == ET_DYN && find_interp(elf, &dynamic) &&
			   flagged_pie(elf, &dynamic));
	elf_end(elf);
	return program;
}

/*
 * The other ELF files execve() opens for exec, denying writers while it
 * runs: the dynamic loader, which every dynamic program's exec opens (its
 * PT_INTERP), and a static PIE.  Both are ET_DYN without PT_INTERP, as
 * shared libraries are, with an entry point, which a shared library seldom
 * has; and a static PIE has DF_1_PIE, the loader no DT_NEEDED.  Libraries
 * without DT_NEEDED exist (Debian 12's libicudata and libX11-xcb), but
 * their entry point is 0.
 */
static bool loader_or_static_pie(const struct pb_file *f)
{
	Elf *elf = begin(f);
	GElf_Phdr dynamic;
	GElf_Dyn needed;
	GElf_Ehdr h;
	bool found = false;

	if (!elf)
		return false;
	if (gelf_getehdr(elf, &h) && h.e_type == ET_DYN && h.e_entry && !find_interp(elf, &dynamic))
		found = flagged_pie(elf, &dynamic) ||
			!dynamic_entry(elf, &dynamic, DT_NEEDED, &needed);
	elf_end(elf);
	return found;
}

uint64_t pb_elf_content_size(const struct pb_file *f)
{
	const struct pb_elf *e = f->elf;

	if ((e->pb_index && e->undo_ok) || f->interrupted)
		return le64toh(e->undo.content_size);
	return e->file_size;
}

uint64_t pb_elf_record_offset(const struct pb_file *f)
{
	return f->elf->pb_index ? f->elf->pb_shdr.sh_offset : 0;
}

int pb_elf_slot(const struct pb_file *f, uint64_t *slot_offset, uint64_t *section_size)
{
	const struct pb_elf *e = f->elf;
	size_t stride = 0;

	*section_size = e->pb_shdr.sh_size;
	pb_slot_size(e->pb_shdr.sh_size, &stride);
	*slot_offset = e->pb_shdr.sh_offset + (e->slot > 0 ? stride : 0);
	return e->slot;
}

bool pb_elf_marker_want(const struct pb_file *f, struct pbitmap_marker *m)
{
	const struct pb_elf *e = f->elf;

	if (!e || !e->pb_index || !f->has_record)
		return false;
	pb_marker_make(m, e->pb_shdr.sh_offset, (uint32_t)e->pb_shdr.sh_size, e->file_size);
	return true;
}

/* ---- modification -------------------------------------------------------- */

/* A private copy (f->rep) is synced once, by pb_commit(). */
static int sync_in_place(struct pb_file *f)
{
	return f->rep ? 0 : fdatasync(f->fd);
}

static int sync_or_fail(struct pb_file *f)
{
	if (sync_in_place(f))
		return pb_error_errno(f->path, "fdatasync");
	return 0;
}

/* File bytes of the ELF header as it was before stamping, from the undo data. */
static int original_ehdr(struct pb_file *f, unsigned char *out, size_t *size)
{
	const struct pbitmap_header *h = &f->elf->undo;
	Elf *elf = begin(f);
	int ret = 0;

	if (!elf)
		return libelf_fail(f, "elf_begin");
	if (ehdr_to_file(elf, f->elf->cls, le64toh(h->orig_shoff),
			 le32toh(h->orig_shnum), le16toh(h->orig_shstrndx), out, size))
		ret = libelf_fail(f, "cannot translate the ELF header");
	elf_end(elf);
	return ret;
}

/* Restore the original header fields, then cut the tail off. */
static int remove_tail(struct pb_file *f)
{
	struct pb_elf *e = f->elf;
	uint64_t content = le64toh(e->undo.content_size);
	unsigned char ehdr[sizeof(Elf64_Ehdr)];
	size_t ehdr_size;

	if (e->pb_index) {
		if (original_ehdr(f, ehdr, &ehdr_size))
			return PB_FAIL;
		if (pwrite_full(f->fd, ehdr, ehdr_size, 0))
			return pb_error_errno(f->path, "write of the ELF header");
		pb_fault_point("strip-header");
		if (sync_or_fail(f))
			return PB_FAIL;
	}
	if (ftruncate(f->fd, (off_t)content))
		return pb_error_errno(f->path, "truncate");
	pb_fault_point("strip-truncated");
	if (sync_or_fail(f))
		return PB_FAIL;
	/* The file is its original now: what is kept of it must say so (the marker). */
	e->pb_index = 0;
	e->file_size = content;
	f->interrupted = false;
	f->has_record = false;
	pb_record_free(&f->rec);
	return 0;
}

int pb_elf_unstamp(struct pb_file *f)
{
	struct pb_elf *e = f->elf;

	if (!e->pb_index && !f->interrupted)
		return PB_NONE;
	if (e->pb_index && !e->undo_ok)
		return pb_error(f->path, "cannot remove the bitmap: %s; "
				"remove the section with objcopy --remove-section .pbitmap",
				e->damage ? e->damage : "undo data does not match the file");
	return remove_tail(f);
}

/* The section name table grown by ".pbitmap"; sets @name_off. */
static unsigned char *grow_strtab(struct pb_file *f, Elf *elf, size_t *size,
				  size_t *name_off)
{
	Elf_Scn *scn = elf_getscn(elf, f->elf->ehdr.e_shstrndx);
	Elf_Data *d = scn ? elf_rawdata(scn, NULL) : NULL;
	static const char name[] = PBITMAP_SECTION_NAME;
	size_t old;
	unsigned char *buf;

	/* check_shstrtab() accepted a non-empty, NUL-terminated table in the file. */
	if (!d || !d->d_buf || d->d_size != f->elf->shstrtab_size) {
		libelf_fail(f, "unreadable section name table");
		return NULL;
	}
	old = d->d_size;
	buf = malloc(old + sizeof(name));
	if (!buf) {
		pb_error_errno(f->path, "malloc");
		return NULL;
	}
	memcpy(buf, d->d_buf, old);
	memcpy(buf + old, name, sizeof(name));
	*name_off = old;
	*size = old + sizeof(name);
	return buf;
}

/* The original section headers, .shstrtab's moved, plus .pbitmap's. */
static GElf_Shdr *new_shdrs(struct pb_file *f, Elf *elf, const struct tail_layout *t,
			    size_t name_off, uint64_t section_size)
{
	struct pb_elf *e = f->elf;
	GElf_Shdr *s = calloc(e->shnum + 1, sizeof(*s));

	if (!s) {
		pb_error_errno(f->path, "malloc");
		return NULL;
	}
	for (size_t i = 0; i < e->shnum; i++) {
		if (!gelf_getshdr(elf_getscn(elf, i), &s[i])) {
			libelf_fail(f, "unreadable section header");
			free(s);
			return NULL;
		}
	}
	s[e->ehdr.e_shstrndx].sh_offset = t->strtab_offset;
	s[e->ehdr.e_shstrndx].sh_size = t->strtab_size;
	s[e->shnum] = (GElf_Shdr){
		.sh_name = (GElf_Word)name_off,
		.sh_type = SHT_PROGBITS,
		.sh_offset = t->record_offset,
		.sh_size = section_size,
		.sh_addralign = 8,
	};
	return s;
}

struct tail {
	struct tail_layout at;
	unsigned char *strtab;
	void *shdrs;
	size_t shdrs_size;
	unsigned char ehdr[sizeof(Elf64_Ehdr)];
	size_t ehdr_size;
};

static void free_tail(struct tail *t)
{
	free(t->strtab);
	free(t->shdrs);
}

static int build_tail(struct pb_file *f, Elf *elf, struct pb_record *r, struct tail *t)
{
	struct pb_elf *e = f->elf;
	struct pbitmap_header *h = pb_hdr(r);
	uint64_t content = e->file_size;
	size_t strtab_size, name_off;
	GElf_Shdr *shdrs;

	t->strtab = grow_strtab(f, elf, &strtab_size, &name_off);
	if (!t->strtab)
		return PB_FAIL;
	plan_tail(e->cls, content, pb_section_size(r->size), strtab_size, e->shnum + 1, &t->at);
	if (e->cls == ELFCLASS32 && t->at.end > UINT32_MAX)
		return elf_fail(f, "a 32-bit ELF file cannot grow beyond 4 GiB");
	h->orig_shoff = htole64(e->ehdr.e_shoff);
	h->orig_shnum = htole32((uint32_t)e->ehdr.e_shnum);
	h->orig_shstrndx = htole16((uint16_t)e->ehdr.e_shstrndx);
	h->record_offset = htole64(t->at.record_offset);
	h->tail_size = htole64(t->at.end - content);
	pb_record_seal(r);

	shdrs = new_shdrs(f, elf, &t->at, name_off, pb_section_size(r->size));
	if (!shdrs)
		return PB_FAIL;
	t->shdrs = shdrs_to_file(elf, e->cls, shdrs, e->shnum + 1, &t->shdrs_size);
	free(shdrs);
	if (!t->shdrs)
		return libelf_fail(f, "cannot translate section headers");
	if (ehdr_to_file(elf, e->cls, t->at.shdr_offset, e->shnum + 1,
			 e->ehdr.e_shstrndx, t->ehdr, &t->ehdr_size))
		return libelf_fail(f, "cannot translate the ELF header");
	return 0;
}

/*
 * Both slots of @r written alike at @offset, the bytes between them zero
 * (written, not a hole: the kernel overwrites only allocated blocks).
 */
static int write_section(int fd, const struct pb_record *r, uint64_t offset)
{
	uint64_t size = pb_section_size(r->size);
	unsigned char *buf = calloc(1, size);
	int ret;

	if (!buf)
		return -1;
	memcpy(buf, r->buf, r->size);
	memcpy(buf + size - r->size, r->buf, r->size);
	ret = pwrite_full(fd, buf, size, offset);
	free(buf);
	return ret;
}

/*
 * Write order: the record (first, so an interrupted tail is recognisable),
 * the rest of the tail, a data sync, and only then the header switch.
 */
static int write_tail(struct pb_file *f, const struct pb_record *r, const struct tail *t)
{
	uint64_t content = f->elf->file_size;
	size_t gap = (size_t)(t->at.shdr_offset - t->at.strtab_offset - t->at.strtab_size);
	unsigned char zeros[8] = { 0 };

	if (write_section(f->fd, r, t->at.record_offset))
		goto fail;
	pb_fault_point("tail-record");
	if (pwrite_full(f->fd, t->strtab, t->at.strtab_size, t->at.strtab_offset) ||
	    pwrite_full(f->fd, zeros, gap, t->at.strtab_offset + t->at.strtab_size) ||
	    pwrite_full(f->fd, t->shdrs, t->shdrs_size, t->at.shdr_offset))
		goto fail;
	pb_fault_point("tail-written");
	if (sync_in_place(f))
		goto fail;
	if (pwrite_full(f->fd, t->ehdr, t->ehdr_size, 0))
		goto fail;
	pb_fault_point("header-switched");
	if (sync_in_place(f))
		return pb_error_errno(f->path, "fdatasync");
	return 0;
fail:
	pb_error_errno(f->path, "write");
	/* Nothing references the tail yet: cutting it off restores the file. */
	if (ftruncate(f->fd, (off_t)content))
		pb_error_errno(f->path, "truncate back to the original size");
	return PB_FAIL;
}

int pb_elf_stamp(struct pb_file *f, const struct pb_params *p)
{
	struct pb_elf *e = f->elf;
	struct pb_record r = { 0 };
	struct tail t = { 0 };
	Elf *elf;
	int ret;

	if (e->pb_index || f->interrupted)
		return pb_error(f->path, "internal error: stamping a stamped file");
	if (pb_record_init(&r, e->file_size, p->page_shift, p->nr_planes,
			   p->threshold, p->flags))
		return pb_error_errno(f->path, "cannot make a record of this geometry");
	if (p->plan_size && pb_record_set_plan_area(&r, p->plan_size)) {
		pb_record_free(&r);
		return pb_error_errno(f->path, "cannot make a record with a plan area of %zu bytes",
				      p->plan_size);
	}
	if (p->carry)
		pb_record_carry(&r, p->carry);
	elf = begin(f);
	if (!elf) {
		pb_record_free(&r);
		return libelf_fail(f, "elf_begin");
	}
	ret = build_tail(f, elf, &r, &t);
	elf_end(elf);
	if (!ret)
		ret = write_tail(f, &r, &t);
	free_tail(&t);
	if (ret) {
		pb_record_free(&r);
		return ret;
	}
	pb_record_free(&f->rec);
	f->rec = r;
	f->has_record = true;
	return 0;
}

int pb_elf_save(struct pb_file *f)
{
	if (!f->elf->pb_index || !f->has_record)
		return pb_error(f->path, "no bitmap to update");
	pb_record_seal(&f->rec);
	if (pb_section_size(f->rec.size) != f->elf->pb_shdr.sh_size)
		return pb_error(f->path, "internal error: the record does not fit its section");
	if (write_section(f->fd, &f->rec, f->elf->pb_shdr.sh_offset))
		return pb_error_errno(f->path, "write of the bitmap");
	return sync_or_fail(f);
}

/* ---- a learned generation, in place ------------------------------------- */

/*
 * Why the slot that is not current cannot be written in place, checked
 * before anything is written, or NULL.  Each reason is a case where the
 * kernel's write-back would not write either, or one where a write(2)
 * from user space changes more than the kernel's does (it goes through
 * file_remove_privs() and file_update_time(); the kernel's writes
 * through the page cache and moves only ctime).
 */
static const char *in_place_refusal(struct pb_file *f, const struct stat *st,
				    size_t *stride)
{
	const struct pb_elf *e = f->elf;
	long page = sysconf(_SC_PAGESIZE);
	size_t slot_size;

	if (!e || !e->pb_index || !f->has_record || e->slot < 0 || !e->undo_ok)
		return "no valid two-slot section";
	slot_size = pb_slot_size(e->pb_shdr.sh_size, stride);
	if (!slot_size || slot_size != f->rec.size)
		return "the record does not fit its slot";
	if ((uint64_t)st->st_size != e->file_size)
		return "its size changed since it was read";
	/* The kernel's test: never a page that a PT_LOAD segment may map. */
	if (page > 0 && e->pb_shdr.sh_offset / (uint64_t)page * (uint64_t)page <
			pb_elf_content_size(f))
		return "its section shares a page with the program's content";
	/*
	 * A slot write changes nothing the marker holds (the section's offset
	 * and size, the file's size), so a valid one stays valid; a missing
	 * or stale one is set again by the renamed copy.  Without user
	 * attributes on the filesystem there is none to keep.
	 */
	if (f->marker != PB_MARKER_OK && f->marker != PB_MARKER_UNSUPPORTED)
		return "its user.pbitmap marker is missing or stale";
	/* A write(2) clears set-ID bits (without CAP_FSETID) and removes file capabilities. */
	if ((st->st_mode & S_ISUID) || (st->st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		return "set-user-ID or set-group-ID: a write would clear that";
	if (fgetxattr(f->fd, "security.capability", NULL, 0) >= 0 ||
	    (errno != ENODATA && errno != ENOTSUP))
		return "it has file capabilities: a write would remove them";
	/*
	 * While a descriptor is open for writing, every execve() of the file
	 * fails with ETXTBSY: a program started in a loop (a compiler in a
	 * build) would fail at random.  A program (ET_EXEC, PIE) keeps the
	 * renamed copy; start-up plans written by the tool do not list the
	 * program itself (cmd-plan.c).  So does the dynamic loader, which
	 * every dynamic program's exec opens for exec (a write-open of it
	 * would fail every such exec for as long as it is held, its fdatasync
	 * included), and a static PIE.  Libraries are mapped, not executed:
	 * one that is, its own way (Debian's libc.so.6 prints its version),
	 * refuses the write-open while it runs (ETXTBSY, below).
	 */
	if (pb_elf_is_program(f))
		return "an executable: a write-open would make a concurrent exec of it fail";
	if (loader_or_static_pie(f))
		return "the dynamic loader or a static PIE: a write-open would make a concurrent "
		       "exec fail";
	return NULL;
}

/*
 * Write f->rec, a learned generation (one more run than the current
 * slot's), into the slot that is not current, as the kernel's write-back
 * does (mm/pbitmap/writeback.c; docs/FORMAT.md, "In an ELF executable or
 * shared library"): under the writers' lock pb_open(PB_OPEN_WRITE) took,
 * after its refusals (IMA, fs-verity, immutable, not writable), the
 * current slot made durable first, then the other slot written, then
 * synced.  A reader meanwhile finds the other slot failing its checksum
 * and reads the current one; a kill at any point leaves the current one
 * whole, and the next learned write goes into the torn slot again.  The
 * file keeps its inode, so start-up plans naming it stay valid, its
 * hard links see the new generation, and its modification time is put
 * back (the kernel never moves it; ctime moves, as for any write).
 */
int pb_elf_save_in_place(struct pb_file *f, const char **why)
{
	static char why_open[160];
	struct pb_elf *e = f->elf;
	struct timespec times[2];
	unsigned int oflags = O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
			      ((f->open_flags & PB_OPEN_FOLLOW) ? 0 : O_NOFOLLOW);
	size_t stride = 0, half;
	struct stat st, wst;
	uint64_t off;
	int wfd, next;

	if (f->rep)
		return pb_error(f->path, "internal error: a learned generation during a change");
	pb_record_seal(&f->rec);
	if (fstat(f->fd, &st))
		return pb_error_errno(f->path, "fstat");
	*why = in_place_refusal(f, &st, &stride);
	if (*why)
		return PB_NONE;
	/*
	 * The modification time is put back after the write, which takes
	 * what setting it takes (the owner, or CAP_FOWNER): set it to what it
	 * is now first, before a byte is written (ctime moves, as it will).
	 */
	times[0].tv_sec = 0;
	times[0].tv_nsec = UTIME_OMIT;
	times[1] = st.st_mtim;
	if (futimens(f->fd, times)) {
		*why = "its modification time could not be kept (not its owner)";
		return PB_NONE;
	}
	/*
	 * The current slot on the disk before the other one is written: a
	 * write of the kernel's may still be dirty in the page cache, and
	 * writeback could then write both slots at once.
	 */
	if (fdatasync(f->fd))
		return pb_error_errno(f->path, "fdatasync");
	pb_fault_point("in-place-durable");
	/* The same inode, which the lock is on: opened by its name, and checked. */
	wfd = pb_path_open(f->path, (int)oflags, 0);
	if (wfd < 0) {
		snprintf(why_open, sizeof(why_open), "%s",
			 errno == ETXTBSY ? "it is being executed (ETXTBSY: exec denies writers)" :
			 "it cannot be opened for writing");
		if (errno != ETXTBSY)
			snprintf(why_open + strlen(why_open), sizeof(why_open) - strlen(why_open),
				 ": %s", strerror(errno));
		*why = why_open;
		return PB_NONE;
	}
	if (fstat(wfd, &wst) || wst.st_dev != st.st_dev || wst.st_ino != st.st_ino) {
		close(wfd);
		*why = "its name leads to another file now";
		return PB_NONE;
	}
	next = !e->slot;
	off = e->pb_shdr.sh_offset + (next ? stride : 0);
	/* In two writes: the crash tests kill it in between (a torn slot). */
	half = f->rec.size / 2;
	if (pwrite_full(wfd, f->rec.buf, half, off))
		goto fail;
	pb_fault_point("in-place-half");
	if (pwrite_full(wfd, f->rec.buf + half, f->rec.size - half, off + half))
		goto fail;
	pb_fault_point("in-place-written");
	if (futimens(wfd, times))
		pb_error_errno(f->path, "cannot put its modification time back");
	if (close(wfd))
		return pb_error_errno(f->path, "write of the bitmap");
	/* Closed before the sync: the file is open for writing no longer than the write. */
	if (fdatasync(f->fd))
		return pb_error_errno(f->path, "fdatasync");
	pb_fault_point("in-place-synced");
	e->slot = next;
	if (fstat(f->fd, &f->st))
		return pb_error_errno(f->path, "fstat");
	return 0;
fail:
	/* The current slot is untouched: the file reads as before. */
	pb_error_errno(f->path, "write of the bitmap into its other slot");
	close(wfd);
	return PB_FAIL;
}

int pb_elf_read_original(struct pb_file *f,
			 int (*sink)(void *ctx, const void *buf, size_t len),
			 void *ctx)
{
	struct pb_elf *e = f->elf;
	uint64_t size = pb_elf_content_size(f), off = 0;
	unsigned char ehdr[sizeof(Elf64_Ehdr)];
	size_t chunk = 1 << 20, ehdr_size = 0;
	unsigned char *buf;
	int ret = 0;

	if (e->pb_index && !e->undo_ok)
		return pb_error(f->path, "cannot reconstruct the original: %s",
				e->damage ? e->damage : "undo data does not match the file");
	/* The header as it was: the stamp changed only its section table fields. */
	if (e->pb_index && original_ehdr(f, ehdr, &ehdr_size))
		return PB_FAIL;
	buf = malloc(chunk);
	if (!buf)
		return pb_error_errno(f->path, "malloc");
	while (off < size && !ret) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;

		if (pread_full(f->fd, buf, n, off)) {
			ret = pb_error_errno(f->path, "read");
			break;
		}
		if (off == 0)
			memcpy(buf, ehdr, ehdr_size < n ? ehdr_size : n);
		if (sink(ctx, buf, n))
			ret = PB_FAIL;
		off += n;
	}
	free(buf);
	return ret;
}

static int discard(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	(void)buf;
	(void)len;
	return 0;
}

/*
 * The fuzz target's entry: run the very inspection pb_open() uses, on a
 * memory file holding @buf.
 */
const char *pb_elf_check_memory(const void *buf, size_t size)
{
	struct pb_file f = { .path = "<memory>" };
	const char *why;
	int ret;

	f.fd = memfd_create("pbitmap-check", MFD_CLOEXEC);
	if (f.fd < 0)
		return "memfd_create failed";
	if ((size && pwrite_full(f.fd, buf, size, 0)) || fstat(f.fd, &f.st)) {
		close(f.fd);
		return "memfd write failed";
	}
	ret = pb_elf_inspect(&f);
	if (ret == PB_NONE)
		why = "not ELF";
	else if (ret)
		why = "rejected";
	else
		why = f.elf->damage;
	if (!ret && (f.has_record || f.interrupted))
		pb_elf_read_original(&f, discard, NULL);
	pb_record_free(&f.rec);
	pb_elf_free(&f);
	close(f.fd);
	return why;
}
