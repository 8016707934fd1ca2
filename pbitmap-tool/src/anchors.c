// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Anchors: what lets a profile learned on one build of a program carry
 * into another build of it.
 *
 * A rebuild with code changes moves functions, so a byte offset means
 * nothing across builds; a place in a named thing does.  Distribution
 * binaries are stripped, so only what a stripped file keeps can name
 * things:
 *
 *   - sections, by name ("@ehdr" and "@phdrs" for the ELF header and the
 *     program header table, each where it is);
 *   - defined .dynsym symbols with a size, by name (a library's exports);
 *   - every function, from the .eh_frame_hdr table the unwinder uses (it
 *     survives strip: C++ exceptions and backtraces need it).  Functions
 *     have no names there, so a function is known by a fingerprint, its
 *     length and its CFI program (which describes its prologue and
 *     epilogue and holds no addresses), and by its place in address order.
 *
 * Carrying a byte goes through the most precise anchor that holds it: a
 * symbol, a function, a section.  A byte inside a symbol or function of
 * the old build that has no counterpart in the new one is dropped, never
 * guessed: a wrong page costs a read and memory, a missing one only the
 * fault it would have saved.  Symbols and functions whose size changed
 * place bytes at the same proportion of their length; sections whose size
 * changed, by their offset from the nearer end (place_section()).
 *
 * libelf reads the headers, sections, symbols and notes; the .eh_frame_hdr
 * table and the FDEs are read by hand (libelf does not parse them), with
 * every read bounds-checked: this is a parser of untrusted bytes, and the
 * fuzz target runs it.
 */
#include <gelf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

/* ---- reading bytes ------------------------------------------------------ */

struct cursor {
	const unsigned char *base;	/* the section's bytes */
	uint64_t size, pos;
	uint64_t vaddr;			/* the section's address, for pcrel */
	bool msb;
	bool ok;
};

static uint64_t get_n(struct cursor *c, unsigned int n)
{
	uint64_t v = 0;

	if (!c->ok || c->pos > c->size || n > c->size - c->pos) {
		c->ok = false;
		return 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		unsigned int shift = c->msb ? 8 * (n - 1 - i) : 8 * i;

		v |= (uint64_t)c->base[c->pos + i] << shift;
	}
	c->pos += n;
	return v;
}

static uint64_t get_uleb(struct cursor *c, bool is_signed)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	unsigned char b;

	do {
		if (!c->ok || c->pos >= c->size || shift > 63) {
			c->ok = false;
			return 0;
		}
		b = c->base[c->pos++];
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return v;
}

/* DW_EH_PE_* pointer encodings (LSB, "Exception Frames"). */
#define PE_OMIT		0xff
#define PE_ABSPTR	0x00
#define PE_ULEB128	0x01
#define PE_UDATA2	0x02
#define PE_UDATA4	0x03
#define PE_UDATA8	0x04
#define PE_SLEB128	0x09
#define PE_SDATA2	0x0a
#define PE_SDATA4	0x0b
#define PE_SDATA8	0x0c
#define PE_PCREL	0x10
#define PE_DATAREL	0x30

/*
 * A pointer in encoding @enc; @datarel is the base of DW_EH_PE_datarel
 * (.eh_frame_hdr's address).  Only the value format with @no_base (a
 * length: an FDE's address range).
 */
static uint64_t get_encoded(struct cursor *c, unsigned int enc, unsigned int ptr_size,
			    uint64_t datarel, bool no_base)
{
	uint64_t at = c->vaddr + c->pos, v;

	switch (enc & 0x0f) {
	case PE_ABSPTR:
		v = get_n(c, ptr_size);
		break;
	case PE_ULEB128:
		v = get_uleb(c, false);
		break;
	case PE_SLEB128:
		v = get_uleb(c, true);
		break;
	case PE_UDATA2:
		v = get_n(c, 2);
		break;
	case PE_SDATA2:
		v = (uint64_t)(int64_t)(int16_t)get_n(c, 2);
		break;
	case PE_UDATA4:
		v = get_n(c, 4);
		break;
	case PE_SDATA4:
		v = (uint64_t)(int64_t)(int32_t)get_n(c, 4);
		break;
	case PE_UDATA8:
	case PE_SDATA8:
		v = get_n(c, 8);
		break;
	default:
		c->ok = false;
		return 0;
	}
	if (no_base)
		return v;
	switch (enc & 0x70) {
	case 0:
		break;
	case PE_PCREL:
		v += at;
		break;
	case PE_DATAREL:
		v += datarel;
		break;
	default:
		c->ok = false;
	}
	if (ptr_size == 4)
		v &= 0xffffffffu;
	return v;
}

/* ---- the anchor list ---------------------------------------------------- */

static int add_anchor(struct pb_anchors *a, enum pb_anchor_kind kind, uint64_t offset,
		      uint64_t size, const char *name, uint64_t hash, uint32_t ord)
{
	struct pb_anchor *v = pb_grow(a->v, a->n, &a->cap, sizeof(*a->v), 64);

	if (!v)
		return PB_FAIL;
	a->v = v;
	v = &a->v[a->n];
	*v = (struct pb_anchor){ .kind = kind, .offset = offset, .size = size,
				 .hash = hash, .ord = ord };
	if (name) {
		v->name = strdup(name);
		if (!v->name)
			return PB_FAIL;
	}
	a->n++;
	return 0;
}

/* 64-bit FNV-1a. */
static uint64_t fnv1a(uint64_t h, const unsigned char *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV_BASIS 0xcbf29ce484222325ull

/* Program headers beyond this: sections only (real files have a dozen). */
#define MAX_LOADS	64

struct image {
	Elf *elf;
	const unsigned char *buf;
	uint64_t size;
	int cls;
	bool msb;
	size_t phnum;
	GElf_Phdr loads[MAX_LOADS];	/* the PT_LOAD headers */
	size_t nr_loads;
	bool too_many_loads;
};

static void collect_loads(struct image *im)
{
	for (size_t i = 0; i < im->phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(im->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (im->nr_loads == MAX_LOADS) {
			im->too_many_loads = true;
			return;
		}
		im->loads[im->nr_loads++] = ph;
	}
}

/* The file offset of [vaddr, vaddr + len), through a PT_LOAD that maps it whole. */
static bool vaddr_to_offset(const struct image *im, uint64_t vaddr, uint64_t len,
			    uint64_t *offset)
{
	for (size_t i = 0; i < im->nr_loads; i++) {
		const GElf_Phdr *ph = &im->loads[i];

		if (vaddr >= ph->p_vaddr && vaddr - ph->p_vaddr < ph->p_filesz &&
		    len <= ph->p_filesz - (vaddr - ph->p_vaddr) &&
		    !__builtin_add_overflow(ph->p_offset, vaddr - ph->p_vaddr, offset) &&
		    *offset <= im->size && len <= im->size - *offset)
			return true;
	}
	return false;
}

static const char *add_sections(const struct image *im, struct pb_anchors *a)
{
	size_t shnum, shstrndx;
	GElf_Ehdr eh;
	uint64_t headers;

	if (!gelf_getehdr(im->elf, &eh) || elf_getshdrnum(im->elf, &shnum) ||
	    elf_getshdrstrndx(im->elf, &shstrndx))
		return "unreadable ELF headers";
	/* The ELF header and the program header table, each where it is. */
	headers = eh.e_ehsize;
	if (headers && headers <= im->size &&
	    add_anchor(a, PB_ANCHOR_SECTION, 0, headers, "@ehdr", 0, 0))
		return "out of memory";
	headers = (uint64_t)eh.e_phnum * eh.e_phentsize;
	if (eh.e_phoff && headers && eh.e_phoff <= im->size && headers <= im->size - eh.e_phoff &&
	    add_anchor(a, PB_ANCHOR_SECTION, eh.e_phoff, headers, "@phdrs", 0, 0))
		return "out of memory";
	if (shnum < 2)
		return "no section headers";
	for (size_t i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(im->elf, i);
		GElf_Shdr sh;
		const char *name;

		if (!scn || !gelf_getshdr(scn, &sh))
			return "unreadable section header";
		if (sh.sh_type == SHT_NOBITS || !sh.sh_size || sh.sh_offset > im->size ||
		    sh.sh_size > im->size - sh.sh_offset)
			continue;
		name = elf_strptr(im->elf, shstrndx, sh.sh_name);
		if (!name || !name[0] || !strcmp(name, PBITMAP_SECTION_NAME))
			continue;
		if (add_anchor(a, PB_ANCHOR_SECTION, sh.sh_offset, sh.sh_size, name, 0, 0))
			return "out of memory";
	}
	return NULL;
}

static const char *add_symbols(const struct image *im, struct pb_anchors *a)
{
	Elf_Scn *scn = NULL;

	if (im->too_many_loads)
		return NULL;

	while ((scn = elf_nextscn(im->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 1; i < n; i++) {
			GElf_Sym s;
			const char *name;
			uint64_t off;
			int type;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			type = GELF_ST_TYPE(s.st_info);
			if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || !s.st_size ||
			    (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC))
				continue;
			name = elf_strptr(im->elf, sh.sh_link, s.st_name);
			if (!name || !name[0] ||
			    !vaddr_to_offset(im, s.st_value, s.st_size, &off))
				continue;
			if (add_anchor(a, PB_ANCHOR_SYMBOL, off, s.st_size, name, 0, 0))
				return "out of memory";
		}
	}
	return NULL;
}

/* The section holding address @vaddr, with its bytes. */
static bool section_at(const struct image *im, uint64_t vaddr, struct cursor *c)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(im->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || vaddr < sh.sh_addr ||
		    vaddr - sh.sh_addr >= sh.sh_size || sh.sh_offset > im->size ||
		    sh.sh_size > im->size - sh.sh_offset)
			continue;
		*c = (struct cursor){ .base = im->buf + sh.sh_offset, .size = sh.sh_size,
				      .pos = vaddr - sh.sh_addr, .vaddr = sh.sh_addr,
				      .msb = im->msb, .ok = true };
		return true;
	}
	return false;
}

/*
 * The FDE encoding of the CIE at @cie (a cursor at its length field);
 * false if it cannot be read.  Only 'z' augmentations are understood, as
 * every toolchain of the last twenty years writes.
 */
static bool cie_fde_encoding(struct cursor cie, unsigned int ptr_size, unsigned int *enc)
{
	uint64_t len = get_n(&cie, 4), end, id;
	const char *aug;
	size_t aug_len;
	unsigned int version;

	if (len == 0xffffffffu || !cie.ok || len < 5 || len > cie.size - cie.pos)
		return false;
	end = cie.pos + len;
	cie.size = end;		/* every read below stays inside the CIE */
	id = get_n(&cie, 4);
	version = (unsigned int)get_n(&cie, 1);
	if (!cie.ok || id != 0 || (version != 1 && version != 3) || cie.pos >= end)
		return false;
	aug = (const char *)cie.base + cie.pos;
	aug_len = strnlen(aug, (size_t)(end - cie.pos));
	if (aug_len == end - cie.pos)
		return false;
	cie.pos += aug_len + 1;
	*enc = PE_ABSPTR;
	if (aug[0] != 'z')
		return aug_len == 0;
	get_uleb(&cie, false);		/* code alignment */
	get_uleb(&cie, true);		/* data alignment */
	if (version == 1)
		get_n(&cie, 1);
	else
		get_uleb(&cie, false);	/* return address register */
	get_uleb(&cie, false);		/* augmentation data length */
	for (size_t i = 1; i < aug_len && cie.ok; i++) {
		switch (aug[i]) {
		case 'R':
			*enc = (unsigned int)get_n(&cie, 1);
			return cie.ok && cie.pos <= end;
		case 'L':
			get_n(&cie, 1);
			break;
		case 'P': {
			unsigned int penc = (unsigned int)get_n(&cie, 1);

			get_encoded(&cie, penc & 0x7f, ptr_size, 0, true);
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return false;
		}
	}
	return cie.ok;
}

/*
 * The length and fingerprint of the FDE at @fde_vaddr: the hash covers
 * its address range and CFI instructions (not its augmentation data,
 * which holds the LSDA's address).
 */
static bool fde_fingerprint(const struct cursor *frame, uint64_t fde_vaddr,
			    unsigned int ptr_size, uint64_t *begin, uint64_t *range,
			    uint64_t *hash, uint64_t *hashed)
{
	struct cursor c = *frame, cie;
	uint64_t len, end, cie_ptr, cie_pos;
	unsigned char le[8];
	unsigned int enc;

	if (fde_vaddr < frame->vaddr || fde_vaddr - frame->vaddr >= frame->size)
		return false;
	c.pos = fde_vaddr - frame->vaddr;
	len = get_n(&c, 4);
	if (!c.ok || len == 0xffffffffu || len < 8 || len > c.size - c.pos)
		return false;
	end = c.pos + len;
	cie_ptr = get_n(&c, 4);
	if (!c.ok || !cie_ptr || cie_ptr > c.pos - 4)
		return false;
	cie_pos = c.pos - 4 - cie_ptr;
	cie = c;
	cie.size = frame->size;
	cie.pos = cie_pos;
	c.size = end;		/* every read below stays inside the FDE */
	if (!cie_fde_encoding(cie, ptr_size, &enc) || enc == PE_OMIT)
		return false;
	*begin = get_encoded(&c, enc & 0x7f, ptr_size, 0, false);
	*range = get_encoded(&c, enc & 0x0f, ptr_size, 0, true);
	if (!c.ok)
		return false;
	/* With a 'z' CIE an augmentation length follows; skip the data. */
	{
		struct cursor z = cie;
		uint64_t skip;

		get_n(&z, 4);
		get_n(&z, 4);
		get_n(&z, 1);
		if (z.ok && z.pos < z.size && z.base[z.pos] == 'z') {
			skip = get_uleb(&c, false);
			if (!c.ok || c.pos > end || skip > end - c.pos)
				return false;
			c.pos += skip;
		}
	}
	if (c.pos > end)
		return false;
	*hashed += end - c.pos;
	for (unsigned int i = 0; i < 8; i++)
		le[i] = (unsigned char)(*range >> (8 * i));
	*hash = fnv1a(fnv1a(FNV_BASIS, le, sizeof(le)), c.base + c.pos, end - c.pos);
	return true;
}

struct fde_start {
	uint64_t start, range, hash;
};

static int by_start(const void *x, const void *y)
{
	const struct fde_start *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/*
 * Without .eh_frame_hdr (gcc -static does not ask the linker for one), the
 * FDEs of .eh_frame itself, walked in order and then sorted by the address
 * of their function, give the same anchors.
 */
static const char *add_functions_from_frame(const struct image *im, struct pb_anchors *a)
{
	unsigned int ptr_size = im->cls == ELFCLASS64 ? 8 : 4;
	struct fde_start *v = NULL, *grown;
	size_t n = 0, cap = 0, shstrndx;
	uint64_t hashed = 0;
	struct cursor frame = { 0 };
	Elf_Scn *scn = NULL;
	const char *why = NULL;
	bool found = false;

	if (elf_getshdrstrndx(im->elf, &shstrndx))
		return NULL;
	while (!found && (scn = elf_nextscn(im->elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC))
			continue;
		name = elf_strptr(im->elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame"))
			found = section_at(im, sh.sh_addr, &frame) && frame.pos == 0;
	}
	if (!found)
		return NULL;	/* no unwind information: sections and symbols only */
	while (frame.ok && frame.pos + 8 <= frame.size && hashed <= 2 * frame.size) {
		uint64_t at = frame.pos, len = get_n(&frame, 4), id, begin, range, hash, off;

		if (!frame.ok || len == 0 || len == 0xffffffffu || len > frame.size - frame.pos)
			break;
		id = get_n(&frame, 4);
		frame.pos = at + 4 + len;
		if (!id || !fde_fingerprint(&frame, frame.vaddr + at, ptr_size, &begin, &range,
					    &hash, &hashed) || !range)
			continue;
		if (!vaddr_to_offset(im, begin, range, &off))
			continue;
		grown = pb_grow(v, n, &cap, sizeof(*v), 256);
		if (!grown) {
			why = "out of memory";
			break;
		}
		v = grown;
		v[n++] = (struct fde_start){ off, range, hash };
	}
	if (!why && n)
		qsort(v, n, sizeof(*v), by_start);
	for (size_t i = 0; !why && i < n; i++)
		if (add_anchor(a, PB_ANCHOR_FUNCTION, v[i].start, v[i].range, NULL, v[i].hash,
			       (uint32_t)i))
			why = "out of memory";
	free(v);
	return why;
}

static const char *add_functions(const struct image *im, struct pb_anchors *a)
{
	unsigned int ptr_size = im->cls == ELFCLASS64 ? 8 : 4;
	unsigned int ptr_enc, count_enc, table_enc;
	uint64_t hdr_vaddr = 0, frame_vaddr, count, hashed = 0;
	struct cursor c = { 0 }, frame;
	bool found = false;

	if (im->too_many_loads)
		return NULL;

	for (size_t i = 0; i < im->phnum && !found; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(im->elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME) {
			hdr_vaddr = ph.p_vaddr;
			found = section_at(im, hdr_vaddr, &c) && c.pos == 0;
		}
	}
	if (!found)
		return add_functions_from_frame(im, a);
	if (get_n(&c, 1) != 1)
		return NULL;
	ptr_enc = (unsigned int)get_n(&c, 1);
	count_enc = (unsigned int)get_n(&c, 1);
	table_enc = (unsigned int)get_n(&c, 1);
	if (!c.ok || ptr_enc == PE_OMIT || count_enc == PE_OMIT || table_enc == PE_OMIT)
		return NULL;
	frame_vaddr = get_encoded(&c, ptr_enc, ptr_size, hdr_vaddr, false);
	count = get_encoded(&c, count_enc, ptr_size, hdr_vaddr, false);
	if (!c.ok || count > c.size || !section_at(im, frame_vaddr, &frame) || frame.pos)
		return NULL;	/* each entry takes at least 2 bytes; .eh_frame must be a section */
	for (uint64_t i = 0; i < count; i++) {
		uint64_t start = get_encoded(&c, table_enc, ptr_size, hdr_vaddr, false);
		uint64_t fde = get_encoded(&c, table_enc, ptr_size, hdr_vaddr, false);
		uint64_t begin, range, hash, off;

		if (!c.ok)
			break;
		/*
		 * The table's FDEs are disjoint in a real file: hashing more
		 * than .eh_frame holds means entries share FDEs (hostile
		 * input), and the rest of the table is not looked at.
		 */
		if (hashed > 2 * frame.size)
			break;
		if (!fde_fingerprint(&frame, fde, ptr_size, &begin, &range, &hash, &hashed) || !range ||
		    !vaddr_to_offset(im, start, range, &off))
			continue;
		if (add_anchor(a, PB_ANCHOR_FUNCTION, off, range, NULL, hash, (uint32_t)i))
			return "out of memory";
	}
	return NULL;
}

static void build_id_of(const struct image *im, char *hex)
{
	Elf_Scn *scn = NULL;

	hex[0] = '\0';
	while ((scn = elf_nextscn(im->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off, next;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz && nh.n_descsz <= PB_BUILD_ID_MAX) {
				const unsigned char *id = (const unsigned char *)d->d_buf + desc_off;

				for (size_t i = 0; i < nh.n_descsz; i++)
					snprintf(hex + 2 * i, 3, "%02x", id[i]);
				return;
			}
			off = next;
		}
	}
}

const char *pb_anchors_of(const void *buf, size_t size, struct pb_anchors *a,
			  char build_id[2 * PB_BUILD_ID_MAX + 1])
{
	struct image im = { .buf = buf, .size = size };
	const char *why;

	*a = (struct pb_anchors){ 0 };
	build_id[0] = '\0';
	if (elf_version(EV_CURRENT) == EV_NONE)
		return "libelf is too old";
	im.elf = elf_memory((char *)buf, size);
	if (!im.elf)
		return "not ELF";
	if (elf_kind(im.elf) != ELF_K_ELF || elf_getphdrnum(im.elf, &im.phnum)) {
		elf_end(im.elf);
		return "not ELF";
	}
	im.cls = gelf_getclass(im.elf);
	im.msb = ((const unsigned char *)buf)[EI_DATA] == ELFDATA2MSB;
	collect_loads(&im);
	why = add_sections(&im, a);
	if (!why)
		why = add_symbols(&im, a);
	if (!why)
		why = add_functions(&im, a);
	if (!why)
		build_id_of(&im, build_id);
	elf_end(im.elf);
	if (why)
		pb_anchors_free(a);
	return why;
}

/* ---- matching ------------------------------------------------------------ */

/* match[] values besides an index into the new anchors. */
#define NO_MATCH	(-1L)	/* no counterpart: its bytes are dropped */
#define AMBIGUOUS	(-2L)	/* a name not unique on one side: not used at all */

/* Indices of @a's anchors of one kind, sorted by a key. */
struct index {
	size_t *v;
	size_t n;
};

static const struct pb_anchors *sort_set;

static int by_name(const void *x, const void *y)
{
	return strcmp(sort_set->v[*(const size_t *)x].name, sort_set->v[*(const size_t *)y].name);
}

static int by_hash(const void *x, const void *y)
{
	const struct pb_anchor *a = &sort_set->v[*(const size_t *)x];
	const struct pb_anchor *b = &sort_set->v[*(const size_t *)y];

	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	return a->ord < b->ord ? -1 : a->ord > b->ord;
}

static int by_offset(const void *x, const void *y)
{
	const struct pb_anchor *a = &sort_set->v[*(const size_t *)x];
	const struct pb_anchor *b = &sort_set->v[*(const size_t *)y];

	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return a->ord < b->ord ? -1 : a->ord > b->ord;
}

static int make_index(const struct pb_anchors *a, enum pb_anchor_kind kind,
		      int (*cmp)(const void *, const void *), struct index *ix)
{
	ix->n = 0;
	ix->v = malloc((a->n ? a->n : 1) * sizeof(*ix->v));
	if (!ix->v)
		return PB_FAIL;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].kind == kind)
			ix->v[ix->n++] = i;
	sort_set = a;
	qsort(ix->v, ix->n, sizeof(*ix->v), cmp);
	return 0;
}

/* Named anchors of one kind; a name that is not unique on either side is AMBIGUOUS. */
static int match_names(const struct pb_anchors *from, const struct pb_anchors *to,
		       enum pb_anchor_kind kind, long *match)
{
	struct index f, t;
	size_t j = 0;

	if (make_index(from, kind, by_name, &f))
		return PB_FAIL;
	if (make_index(to, kind, by_name, &t)) {
		free(f.v);
		return PB_FAIL;
	}
	for (size_t i = 0; i < f.n; i++) {
		const char *name = from->v[f.v[i]].name;
		int c = 1;

		if ((i > 0 && !strcmp(from->v[f.v[i - 1]].name, name)) ||
		    (i + 1 < f.n && !strcmp(from->v[f.v[i + 1]].name, name))) {
			match[f.v[i]] = AMBIGUOUS;
			continue;
		}
		while (j < t.n && (c = strcmp(to->v[t.v[j]].name, name)) < 0)
			j++;
		if (j < t.n && !c)
			match[f.v[i]] = j + 1 >= t.n || strcmp(to->v[t.v[j + 1]].name, name) ?
					(long)t.v[j] : AMBIGUOUS;
	}
	free(f.v);
	free(t.v);
	return 0;
}

/* The new function anchors with @hash: [*lo, *hi) of @t (sorted by hash). */
static void hash_range(const struct pb_anchors *to, const struct index *t, uint64_t hash,
		       size_t *lo, size_t *hi)
{
	size_t a = 0, b = t->n;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (to->v[t->v[m]].hash < hash)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	b = t->n;
	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (to->v[t->v[m]].hash <= hash)
			a = m + 1;
		else
			b = m;
	}
	*hi = a;
}

/* The new function anchor whose ord is @ord (tord sorted by offset, so by ord). */
static long by_ord(const struct pb_anchors *to, const struct index *tord, int64_t ord)
{
	size_t a = 0, b = tord->n;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if ((int64_t)to->v[tord->v[m]].ord < ord)
			a = m + 1;
		else
			b = m;
	}
	return a < tord->n && (int64_t)to->v[tord->v[a]].ord == ord ? (long)tord->v[a] : NO_MATCH;
}

/*
 * Functions: a fingerprint found once in the new build matches; one found
 * several times takes the candidate nearest where its matched neighbours
 * say it moved to; one not found (the function changed) takes the
 * function at the same place between matched neighbours when exactly as
 * many functions lie between them in both builds.  Each pass is linear
 * but for the binary searches (hostile profiles have millions of anchors).
 */
static int match_functions(const struct pb_anchors *from, const struct pb_anchors *to,
			   long *match)
{
	struct index f, t, tord;
	long *below = NULL, *above = NULL;
	int ret = PB_FAIL;

	if (make_index(from, PB_ANCHOR_FUNCTION, by_offset, &f))
		return PB_FAIL;
	if (make_index(to, PB_ANCHOR_FUNCTION, by_hash, &t))
		goto out_f;
	if (make_index(to, PB_ANCHOR_FUNCTION, by_offset, &tord))
		goto out_t;
	below = malloc((f.n ? f.n : 1) * sizeof(*below));
	above = malloc((f.n ? f.n : 1) * sizeof(*above));
	if (!below || !above)
		goto out;
	for (int pass = 0; pass < 3; pass++) {
		long last = -1;

		/* The nearest matched functions on either side, as this pass starts. */
		for (size_t i = 0; i < f.n; i++) {
			below[i] = last;
			if (match[f.v[i]] >= 0)
				last = (long)i;
		}
		last = -1;
		for (size_t i = f.n; i-- > 0;) {
			above[i] = last;
			if (match[f.v[i]] >= 0)
				last = (long)i;
		}
		for (size_t i = 0; i < f.n; i++) {
			const struct pb_anchor *a = &from->v[f.v[i]];
			size_t lo, hi;

			if (match[f.v[i]] >= 0)
				continue;
			hash_range(to, &t, a->hash, &lo, &hi);
			if (pass == 0) {
				if (hi - lo == 1)
					match[f.v[i]] = (long)t.v[lo];
			} else if (pass == 1 && hi - lo > 1) {
				long ref = below[i] >= 0 ? below[i] : above[i];
				int64_t want, best_d = INT64_MAX;

				if (ref < 0)
					continue;
				want = (int64_t)to->v[match[f.v[ref]]].ord +
				       ((int64_t)a->ord - (int64_t)from->v[f.v[ref]].ord);
				for (size_t k = lo; k < hi && k - lo < 64; k++) {
					int64_t d = (int64_t)to->v[t.v[k]].ord - want;

					if (d < 0)
						d = -d;
					if (d < best_d) {
						best_d = d;
						match[f.v[i]] = (long)t.v[k];
					}
				}
			} else if (pass == 2 && below[i] >= 0 && above[i] >= 0) {
				const struct pb_anchor *fb = &from->v[f.v[below[i]]];
				const struct pb_anchor *fa = &from->v[f.v[above[i]]];
				const struct pb_anchor *tb = &to->v[match[f.v[below[i]]]];
				const struct pb_anchor *ta = &to->v[match[f.v[above[i]]]];

				if ((int64_t)fa->ord - (int64_t)fb->ord ==
				    (int64_t)ta->ord - (int64_t)tb->ord)
					match[f.v[i]] = by_ord(to, &tord, (int64_t)tb->ord +
							       ((int64_t)a->ord - (int64_t)fb->ord));
			}
		}
	}
	ret = 0;
out:
	free(below);
	free(above);
	free(tord.v);
out_t:
	free(t.v);
out_f:
	free(f.v);
	return ret;
}

/* ---- carrying ------------------------------------------------------------ */

static int place_at(uint64_t ns, uint64_t ne, uint64_t new_size, struct pb_byte_ranges *out)
{
	if (ne > new_size)
		ne = new_size;
	if (ns >= ne)
		return 0;
	return pb_byte_ranges_add(out, ns, ne - ns);
}

/*
 * Map [s, e) of old section @a into new section @b, of another size.  A
 * section is its input objects' pieces laid end to end, in link order:
 * the pieces before the one that changed keep their offset from the
 * section's start, those after it their offset from its end.  Scaling
 * would move every byte by a share of the difference: in a static program
 * that lost a library (tests/lib/toolbuilds.sh's prog-static), .rodata
 * shrank from 493 KiB to 175 KiB, the C library's tables at its end were
 * placed up to 80 KiB from where they are, and 10 of the pages the new
 * build read were not carried.
 * Where the change lies nothing says, so the first half of the old section
 * keeps its offset from the start and the second half its offset from the
 * end; what then falls outside the new section is dropped.
 */
static int place_section(const struct pb_anchor *a, const struct pb_anchor *b, uint64_t s,
			 uint64_t e, uint64_t new_size, struct pb_byte_ranges *out)
{
	uint64_t mid = a->offset + a->size / 2, a_end = a->offset + a->size;
	uint64_t from_end, to_end;

	if (s < mid) {
		uint64_t m = e < mid ? e : mid;

		if (s - a->offset < b->size &&
		    place_at(b->offset + (s - a->offset),
			     b->offset + (m - a->offset < b->size ? m - a->offset : b->size),
			     new_size, out))
			return PB_FAIL;
		s = m;
	}
	if (s >= e)
		return 0;
	from_end = a_end - s;
	to_end = a_end - e;
	if (to_end >= b->size)
		return 0;
	if (from_end > b->size)
		from_end = b->size;
	return place_at(b->offset + b->size - from_end, b->offset + b->size - to_end, new_size,
			out);
}

/*
 * Map [s, e) of old anchor @a into new anchor @b: at the same offset, or,
 * a symbol or function whose size changed (compiled anew), at the same
 * proportion of its length.
 */
static int place(const struct pb_anchor *a, const struct pb_anchor *b, uint64_t s, uint64_t e,
		 uint64_t new_size, struct pb_byte_ranges *out)
{
	if (a->size == b->size)
		return place_at(b->offset + (s - a->offset), b->offset + (e - a->offset), new_size,
				out);
	if (a->kind == PB_ANCHOR_SECTION)
		return place_section(a, b, s, e, new_size, out);
	return place_at(b->offset + (uint64_t)((unsigned __int128)(s - a->offset) * b->size /
					       a->size),
			b->offset + (uint64_t)(((unsigned __int128)(e - a->offset) * b->size +
						a->size - 1) / a->size),
			new_size, out);
}

/* Remove [s, e) from the set @left (sorted ranges), through @scratch. */
static int take(struct pb_byte_ranges *left, uint64_t s, uint64_t e, struct pb_byte_ranges *scratch)
{
	struct pb_byte_ranges t;

	scratch->n = 0;
	for (size_t i = 0; i < left->n; i++) {
		uint64_t ls = left->v[i].start, le = ls + left->v[i].len;

		if (le <= s || ls >= e) {
			if (pb_byte_ranges_add(scratch, ls, le - ls))
				return PB_FAIL;
			continue;
		}
		if (ls < s && pb_byte_ranges_add(scratch, ls, s - ls))
			return PB_FAIL;
		if (le > e && pb_byte_ranges_add(scratch, e, le - e))
			return PB_FAIL;
	}
	t = *left;
	*left = *scratch;
	*scratch = t;
	return 0;
}

/* What carrying needs of the old anchors, computed once for every generation. */
struct carry {
	const struct pb_anchors *from, *to;
	long *match;
	bool *counted;		/* code anchors already counted in the stats */
	bool *padding;		/* a section holding functions: gaps are padding */
	struct index by_kind[3];	/* sorted by offset */
	uint64_t max_size[3];
};

static const enum pb_anchor_kind carry_order[] = {
	PB_ANCHOR_SYMBOL, PB_ANCHOR_FUNCTION, PB_ANCHOR_SECTION,
};

static void carry_free(struct carry *c)
{
	free(c->match);
	free(c->counted);
	free(c->padding);
	for (int k = 0; k < 3; k++)
		free(c->by_kind[k].v);
}

static int carry_prepare(struct carry *c, const struct pb_anchors *from,
			 const struct pb_anchors *to)
{
	size_t n = from->n ? from->n : 1;
	struct index *fn;

	memset(c, 0, sizeof(*c));
	c->from = from;
	c->to = to;
	c->match = malloc(n * sizeof(*c->match));
	c->counted = calloc(n, sizeof(*c->counted));
	c->padding = calloc(n, sizeof(*c->padding));
	if (!c->match || !c->counted || !c->padding)
		return PB_FAIL;
	for (size_t i = 0; i < from->n; i++)
		c->match[i] = NO_MATCH;
	if (match_names(from, to, PB_ANCHOR_SECTION, c->match) ||
	    match_names(from, to, PB_ANCHOR_SYMBOL, c->match) ||
	    match_functions(from, to, c->match))
		return PB_FAIL;
	for (int k = 0; k < 3; k++) {
		if (make_index(from, (enum pb_anchor_kind)k, by_offset, &c->by_kind[k]))
			return PB_FAIL;
		for (size_t i = 0; i < c->by_kind[k].n; i++)
			if (from->v[c->by_kind[k].v[i]].size > c->max_size[k])
				c->max_size[k] = from->v[c->by_kind[k].v[i]].size;
	}
	/* A section (not "@ehdr", "@phdrs") that holds a function start. */
	fn = &c->by_kind[PB_ANCHOR_FUNCTION];
	for (size_t i = 0; i < c->by_kind[PB_ANCHOR_SECTION].n; i++) {
		const struct pb_anchor *sec = &from->v[c->by_kind[PB_ANCHOR_SECTION].v[i]];
		size_t a = 0, b = fn->n;

		if (sec->name[0] == '@')
			continue;
		while (a < b) {
			size_t m = a + (b - a) / 2;

			if (from->v[fn->v[m]].offset < sec->offset)
				a = m + 1;
			else
				b = m;
		}
		c->padding[c->by_kind[PB_ANCHOR_SECTION].v[i]] =
			a < fn->n && from->v[fn->v[a]].offset - sec->offset < sec->size;
	}
	return 0;
}

/* The first anchor of @ix that can reach @start (its offset + max size beyond it). */
static size_t first_reaching(const struct carry *c, int kind, uint64_t start)
{
	const struct index *ix = &c->by_kind[kind];
	uint64_t from = start > c->max_size[kind] ? start - c->max_size[kind] : 0;
	size_t a = 0, b = ix->n;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (c->from->v[ix->v[m]].offset < from)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

static int carry_range(struct carry *c, uint64_t rs, uint64_t re, uint64_t new_size,
		       struct pb_byte_ranges *out, struct pb_byte_ranges *left,
		       struct pb_byte_ranges *scratch, struct pb_carry_stats *st)
{
	left->n = 0;
	if (pb_byte_ranges_add(left, rs, re - rs))
		return PB_FAIL;
	st->total += re - rs;
	for (size_t o = 0; o < sizeof(carry_order) / sizeof(carry_order[0]) && left->n; o++) {
		int kind = (int)carry_order[o];
		const struct index *ix = &c->by_kind[kind];

		for (size_t k = first_reaching(c, kind, rs); k < ix->n && left->n; k++) {
			size_t i = ix->v[k];
			const struct pb_anchor *a = &c->from->v[i];
			uint64_t as = a->offset, ae = a->offset + a->size;
			uint64_t placed_here = 0;

			if (as >= re)
				break;
			if (ae <= rs || c->match[i] == AMBIGUOUS ||
			    (kind == PB_ANCHOR_SECTION && c->match[i] == NO_MATCH))
				continue;
			for (size_t r = 0; r < left->n; r++) {
				uint64_t s = left->v[r].start, e = s + left->v[r].len;

				if (s < as)
					s = as;
				if (e > ae)
					e = ae;
				if (s >= e)
					continue;
				placed_here += e - s;
				if (kind == PB_ANCHOR_SECTION && c->padding[i]) {
					st->gaps += e - s;
				} else if (c->match[i] == NO_MATCH) {
					st->dropped += e - s;
				} else {
					if (place(a, &c->to->v[c->match[i]], s, e, new_size, out))
						return PB_FAIL;
					if (kind == PB_ANCHOR_SYMBOL)
						st->by_symbol += e - s;
					else if (kind == PB_ANCHOR_FUNCTION)
						st->by_function += e - s;
					else
						st->by_section += e - s;
				}
			}
			if (kind != PB_ANCHOR_SECTION && placed_here && !c->counted[i]) {
				c->counted[i] = true;
				st->code_anchors++;
				st->code_matched += c->match[i] >= 0;
			}
			if (placed_here && take(left, as, ae, scratch))
				return PB_FAIL;
		}
	}
	st->gaps += pb_byte_ranges_bytes(left);
	return 0;
}

int pb_carry_ranges(const struct pb_anchors *from, const struct pb_anchors *to,
		    const struct pb_byte_ranges *in, unsigned int nr, uint64_t new_size,
		    struct pb_byte_ranges *out, struct pb_carry_stats *st)
{
	struct pb_byte_ranges left = { 0 }, scratch = { 0 };
	struct carry c;
	int ret = carry_prepare(&c, from, to);

	for (unsigned int g = 0; !ret && g < nr; g++) {
		for (size_t r = 0; !ret && r < in[g].n; r++)
			ret = carry_range(&c, in[g].v[r].start, in[g].v[r].start + in[g].v[r].len,
					  new_size, &out[g], &left, &scratch, st);
		if (!ret)
			pb_byte_ranges_normalise(&out[g]);
	}
	pb_byte_ranges_free(&left);
	pb_byte_ranges_free(&scratch);
	carry_free(&c);
	return ret;
}
