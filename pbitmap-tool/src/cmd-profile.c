// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap export, pbitmap import: a bitmap as a portable profile and back
 * (profile.c is the format, anchors.c the carrying between builds).  Also
 * what `merge` needs to take profiles as sources.
 *
 * Which entry of a profile applies to a file: the one with the file's
 * content (sha256 of the original bytes), else the one with its build-id,
 * its path, its base name, else the only one.  The same content is an
 * exact import; anything else is carried through the anchors, and refused
 * when none of them is found: a profile of another program must not be
 * applied by accident.
 */
#include <endian.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pbitmap.h"
#include "cli.h"
#include "profile.h"

/* ---- a file, as profiles see it ----------------------------------------- */

struct membuf {
	unsigned char *v;
	size_t n, cap;
};

static int mem_sink(void *ctx, const void *buf, size_t len)
{
	struct membuf *m = ctx;

	if (len > SIZE_MAX - m->n)
		return 1;
	if (m->n + len > m->cap) {
		size_t cap = m->cap ? m->cap : 1 << 16;
		void *v;

		while (cap < m->n + len)
			cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
		v = realloc(m->v, cap);
		if (!v)
			return 1;
		m->v = v;
		m->cap = cap;
	}
	memcpy(m->v + m->n, buf, len);
	m->n += len;
	return 0;
}

int pb_target_load(struct pb_target *t, struct pb_file *f)
{
	struct membuf m = { 0 };

	memset(t, 0, sizeof(*t));
	t->f = f;
	if (pb_read_original(f, mem_sink, &m)) {
		free(m.v);
		return PB_FAIL;
	}
	t->orig = m.v;
	t->size = m.n;
	if (pb_digest_buffer(f->path, m.v ? m.v : (unsigned char *)"", m.n, "sha256",
			     t->sha256)) {
		pb_target_free(t);
		return PB_FAIL;
	}
	if (f->kind == PB_KIND_ELF) {
		const char *why = pb_anchors_of(t->orig, t->size, &t->anchors, t->build_id);

		if (why)
			pb_note(f->path, "no anchors (%s): only its own build's profiles apply", why);
	}
	return 0;
}

void pb_target_free(struct pb_target *t)
{
	free(t->orig);
	pb_anchors_free(&t->anchors);
	memset(t, 0, sizeof(*t));
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The entry of @p that applies to @t (see the top of this file), or NULL. */
static const struct pb_profile_entry *pick_entry(const struct pb_profile *p,
						 const struct pb_target *t);

/* Has @p an entry for @t other than "the only one"? */
bool pb_profile_has_entry(const struct pb_profile *p, const struct pb_target *t)
{
	const struct pb_profile_entry *e = pick_entry(p, t);

	return e && (p->n > 1 || (e->size == t->size && !strcmp(e->sha256, t->sha256)) ||
		     (t->build_id[0] && !strcmp(e->build_id, t->build_id)) ||
		     !strcmp(base_name(e->path), base_name(t->f->path)));
}

static const struct pb_profile_entry *pick_entry(const struct pb_profile *p,
						 const struct pb_target *t)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].size == t->size && !strcmp(p->v[i].sha256, t->sha256))
			return &p->v[i];
	for (size_t i = 0; t->build_id[0] && i < p->n; i++)
		if (!strcmp(p->v[i].build_id, t->build_id))
			return &p->v[i];
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].path, t->f->path))
			return &p->v[i];
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(base_name(p->v[i].path), base_name(t->f->path)))
			return &p->v[i];
	return p->n == 1 ? &p->v[0] : NULL;
}

int pb_profile_apply(const struct pb_profile *p, const char *pname, struct pb_target *t,
		     struct pb_byte_ranges gens[PBITMAP_MAX_PLANES],
		     const struct pb_profile_entry **entry_out, struct pb_carry_stats *st,
		     bool *exact)
{
	const struct pb_profile_entry *e = pick_entry(p, t);
	const char *path = t->f->path;
	bool elf = t->f->kind == PB_KIND_ELF;
	uint64_t placed;

	memset(st, 0, sizeof(*st));
	*entry_out = e;
	if (!e)
		return pb_error(path, "%s has no entry for it (by content, build-id or name)", pname);
	if (e->elf != elf)
		return pb_error(path, "%s's entry \"%s\" is for %s, this is %s", pname, e->path,
				e->elf ? "an ELF file" : "a data file",
				elf ? "an ELF file" : "a data file");
	*exact = e->size == t->size && !strcmp(e->sha256, t->sha256);
	if (*exact) {
		for (unsigned int age = 0; age < e->nr_gens; age++) {
			for (size_t i = 0; i < e->gen[age].n; i++)
				if (pb_byte_ranges_add(&gens[age], e->gen[age].v[i].start,
						       e->gen[age].v[i].len))
					return pb_error(path, "out of memory");
			st->total += pb_byte_ranges_bytes(&e->gen[age]);
		}
		return 0;
	}
	if (!elf)
		return pb_error(path, "%s was learned on other content (sha256 differs), "
				"and a data file has no anchors to carry it by; "
				"nothing changed", pname);
	if (!e->anchors.n || !t->anchors.n)
		return pb_error(path, "%s is for another build (sha256 differs) and %s "
				"no anchors; nothing changed", pname,
				!e->anchors.n ? "the profile has" : "this file has");
	if (pb_carry_ranges(&e->anchors, &t->anchors, e->gen, e->nr_gens, t->size, gens, st))
		return pb_error(path, "out of memory");
	placed = st->by_symbol + st->by_function + st->by_section;
	/*
	 * Every ELF file has a .text and a .rodata: sections alone do not
	 * say that this is the same program.  Its code does: at least half
	 * of the symbols and functions that hold marked bytes must be found
	 * (an unrelated program shares only the C runtime's few), or, with
	 * none marked (nothing marked at all, too), the file must have the
	 * entry's name or build-id.
	 */
	if ((st->total && !placed) ||
	    (st->code_anchors && 2 * st->code_matched < st->code_anchors) ||
	    (!st->code_anchors && strcmp(base_name(e->path), base_name(path)) &&
	     !(t->build_id[0] && !strcmp(e->build_id, t->build_id))))
		return pb_error(path, "%s's entry \"%s\" is for another program: %" PRIu64
				" of its %" PRIu64 " functions and symbols with marked bytes are "
				"found here; nothing changed", pname, e->path, st->code_matched,
				st->code_anchors);
	return 0;
}

/* ---- reading a profile -------------------------------------------------- */

int pb_profile_load(const char *name, struct pb_profile *p)
{
	struct membuf m = { 0 };
	unsigned long line;
	const char *why;
	char chunk[65536];
	int fd = strcmp(name, "-") ? open(name, O_RDONLY | O_CLOEXEC) : 0;
	ssize_t n;

	if (fd < 0)
		return pb_error_errno(name, "cannot open");
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		if (m.n + (size_t)n > PB_PROFILE_MAX_BYTES || mem_sink(&m, chunk, (size_t)n)) {
			n = -2;
			break;
		}
	}
	if (fd)
		close(fd);
	if (n < 0) {
		free(m.v);
		if (n == -2)
			return pb_error(name, "larger than 256 MiB, or out of memory");
		return pb_error_errno(name, "read error");
	}
	why = pb_profile_parse((const char *)(m.v ? m.v : (unsigned char *)""), m.n, p, &line);
	free(m.v);
	if (!why)
		return 0;
	if (line)
		return pb_error(name, "line %lu: %s", line, why);
	return pb_error(name, "%s", why);
}

/* ---- export -------------------------------------------------------------- */

static bool overlaps_any(const struct pb_profile_entry *e, const struct pb_anchor *a)
{
	for (unsigned int age = 0; age < e->nr_gens; age++) {
		const struct pb_byte_ranges *r = &e->gen[age];

		for (size_t i = 0; i < r->n; i++)
			if (r->v[i].start < a->offset + a->size &&
			    a->offset < r->v[i].start + r->v[i].len)
				return true;
	}
	return false;
}

/*
 * The anchors an entry keeps: every section (a few dozen), and the symbols
 * and functions that hold a marked byte, with the functions just before
 * and after each of those, so that a changed function can be placed
 * between matched neighbours (anchors.c).
 */
static int keep_anchors(struct pb_profile_entry *e, struct pb_anchors *all)
{
	bool *keep = calloc(all->n ? all->n : 1, sizeof(*keep));
	size_t out = 0;

	if (!keep)
		return PB_FAIL;
	for (size_t i = 0; i < all->n; i++) {
		const struct pb_anchor *a = &all->v[i];

		if (a->kind == PB_ANCHOR_SECTION || overlaps_any(e, a)) {
			keep[i] = true;
			if (a->kind == PB_ANCHOR_FUNCTION) {
				if (i > 0 && all->v[i - 1].kind == PB_ANCHOR_FUNCTION)
					keep[i - 1] = true;
				if (i + 1 < all->n && all->v[i + 1].kind == PB_ANCHOR_FUNCTION)
					keep[i + 1] = true;
			}
		}
	}
	for (size_t i = 0; i < all->n; i++) {
		if (keep[i])
			all->v[out++] = all->v[i];
		else
			free(all->v[i].name);
	}
	all->n = out;
	free(keep);
	e->anchors = *all;
	*all = (struct pb_anchors){ 0 };
	return 0;
}

static bool marks_anything(const struct pb_record *r)
{
	for (unsigned int age = 0; age < pb_hdr(r)->nr_planes; age++)
		if (pb_count_bits(pb_plane(r, age), pb_nr_pages(r)))
			return true;
	return false;
}

static int export_one(const char *path, unsigned int flags, void *arg)
{
	struct pb_profile *p = arg;
	struct pb_profile_entry *e;
	const struct pbitmap_header *h;
	struct pb_target t;
	struct pb_file f;
	void *v;
	int ret = pb_open(&f, path, flags | PB_OPEN_SHARED_LOCK);

	if (ret)
		return ret;
	/*
	 * --stdin (an rpm transaction's file list): files without a bitmap,
	 * or whose bitmap marks nothing, have nothing to carry; passed over.
	 */
	if ((flags & PB_OPEN_QUIET) && (!f.has_record || !marks_anything(&f.rec))) {
		pb_close(&f);
		return PB_NONE;
	}
	if (!f.has_record) {
		ret = pb_error_no_record(&f);
		pb_close(&f);
		return ret;
	}
	ret = pb_target_load(&t, &f);
	if (ret)
		goto out_close;
	v = pb_grow(p->v, p->n, &p->cap, sizeof(*p->v), 4);
	if (!v) {
		ret = pb_error(path, "out of memory");
		goto out;
	}
	p->v = v;
	e = &p->v[p->n++];
	memset(e, 0, sizeof(*e));
	h = pb_hdr(&f.rec);
	e->path = strdup(path);
	e->elf = f.kind == PB_KIND_ELF;
	e->size = t.size;
	memcpy(e->sha256, t.sha256, sizeof(e->sha256));
	memcpy(e->build_id, t.build_id, sizeof(e->build_id));
	e->policy = le32toh(h->flags) & (PBITMAP_F_NO_LEARN | PBITMAP_F_LEARN_EVERY);
	e->granule_shift = h->page_shift;
	e->threshold = h->threshold;
	e->nr_gens = h->nr_planes;
	e->runs = le64toh(h->runs);
	e->last_update = le64toh(h->last_update);
	if (!e->path)
		ret = pb_error(path, "out of memory");
	for (unsigned int age = 0; age < e->nr_gens && !ret; age++)
		if (pb_record_ranges(&f.rec, age, &e->gen[age]))
			ret = pb_error(path, "out of memory");
	if (!ret && keep_anchors(e, &t.anchors))
		ret = pb_error(path, "out of memory");
	if (ret) {		/* no half-made entry in the profile */
		pb_profile_entry_free(e);
		p->n--;
	}
out:
	pb_target_free(&t);
out_close:
	pb_close(&f);
	return ret;
}

/* Write @p to @out (NULL: stdout), publishing a named file whole or not at all. */
static int write_profile(const struct pb_profile *p, const char *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;
	int err;

	if (!out) {
		if (pb_profile_write(stdout, p))
			return pb_error_errno("<stdout>", "write error");
		return 0;
	}
	fp = open_memstream(&buf, &len);
	if (!fp)
		return pb_error_errno(out, "cannot write");
	err = pb_profile_write(fp, p);
	if (fclose(fp) || err) {
		free(buf);
		return pb_error_errno(out, "write error");
	}
	/* synced: a profile may be all that is left of what was learned */
	err = pb_write_small_file(out, buf, len, 0644, PB_SMALL_SYNC);
	free(buf);
	if (err) {
		errno = -err;
		return pb_error_errno(out, "cannot write");
	}
	return 0;
}

int pb_cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "dereference", no_argument, NULL, 'L' },
		{ "stdin", no_argument, NULL, 'S' },
		{ 0 }
	};
	struct pb_profile p = { 0 };
	const char *out = NULL;
	unsigned int flags = 0;
	bool from_stdin = false;
	int c, ret;

	while ((c = pb_getopt(argc, argv, "o:L", opts)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'L':
			flags |= PB_OPEN_FOLLOW;
			break;
		case 'S':
			from_stdin = true;
			break;
		default:
			return pb_option_exit(c);
		}
	}
	if (optind == argc && !from_stdin)
		return pb_usage_error("export: no FILE given");
	ret = pb_for_each_file(argc, argv, from_stdin, flags, export_one, &p);
	/* Files that failed are reported; a profile of the others is still useful. */
	if (p.n && write_profile(&p, out))
		ret = PB_EXIT_FAIL;
	else if (!p.n && ret == PB_EXIT_OK)
		ret = PB_EXIT_FAIL;
	pb_profile_free(&p);
	return ret;
}

/* ---- import -------------------------------------------------------------- */

struct import_args {
	const struct pb_profile *p;
	const char *name;
	bool dry_run;
	bool summary;
	unsigned long exact, carried, refused, other;
};

/* The granule of a temporary record holding @size bytes: the finest that fits. */
static unsigned int fitting_shift(uint64_t size, unsigned int planes)
{
	unsigned int s = PBITMAP_MIN_PAGE_SHIFT;

	while (s < PBITMAP_MAX_PAGE_SHIFT && !pb_record_size(size, s, planes))
		s++;
	return s;
}

static void report(const char *path, const struct pb_carry_stats *st, bool exact,
		   const struct pb_profile_entry *e, bool dry_run)
{
	uint64_t placed = st->by_symbol + st->by_function + st->by_section;

	if (exact) {
		pb_note(path, "%s: %" PRIu64 " marked bytes in %u generations (same content)",
			dry_run ? "would import" : "imported", st->total, e->nr_gens);
		return;
	}
	pb_note(path, "%s from another build: placed %" PRIu64 " marked bytes (%" PRIu64
		" by symbol, %" PRIu64 " by function, %" PRIu64 " by section), dropped %" PRIu64
		" (%.1f%% placed; %" PRIu64 " bytes of padding not carried); %" PRIu64 " of %"
		PRIu64 " functions and symbols found", dry_run ? "would carry" : "carried",
		placed, st->by_symbol, st->by_function, st->by_section, st->dropped,
		placed + st->dropped ? 100.0 * (double)placed / (double)(placed + st->dropped) : 100.0,
		st->gaps, st->code_matched, st->code_anchors);
}

static int import_one(const char *path, unsigned int flags, void *arg)
{
	struct import_args *a = arg;
	struct pb_byte_ranges gens[PBITMAP_MAX_PLANES] = { 0 };
	const struct pb_profile_entry *e;
	struct pb_carry_stats st;
	struct pb_record tmp = { 0 };
	struct pb_target t;
	struct pb_file f;
	bool exact = false;
	int ret = pb_open(&f, path, flags | (a->dry_run ? 0 : PB_OPEN_WRITE));

	if (ret)
		return ret;
	ret = pb_target_load(&t, &f);
	/* --stdin: a file the profile has no entry for is not this import's. */
	if (!ret && (flags & PB_OPEN_QUIET) && !pb_profile_has_entry(a->p, &t)) {
		ret = PB_NONE;
		a->other++;
		goto out;
	}
	if (!ret)
		ret = pb_profile_apply(a->p, a->name, &t, gens, &e, &st, &exact);
	if (ret)
		a->refused++;
	if (ret || a->dry_run)
		goto out;
	if (f.has_record) {
		struct pbitmap_header *h = pb_hdr(&f.rec);
		uint32_t plane_size = le32toh(h->plane_size);

		for (unsigned int age = 0; age < h->nr_planes; age++) {
			unsigned char *plane = pb_plane(&f.rec, age);

			memset(plane, 0, plane_size);
			if (age < e->nr_gens)
				pb_record_mark(&f.rec, plane, &gens[age]);
		}
		h->threshold = (uint8_t)(e->threshold <= h->nr_planes ? e->threshold : h->nr_planes);
		h->flags = htole32((le32toh(h->flags) & ~(PBITMAP_F_NO_LEARN |
							  PBITMAP_F_LEARN_EVERY)) | e->policy);
		h->runs = htole64(e->runs);
		h->last_update = htole64(e->last_update);
		pb_record_seal(&f.rec);
		ret = pb_save(&f);
	} else {
		struct pb_params params = {
			.nr_planes = e->nr_gens, .threshold = e->threshold,
			.flags = e->policy, .set_flags = true, .carry = &tmp,
		};

		if (pb_record_init(&tmp, pb_content_size(&f), fitting_shift(pb_content_size(&f),
									   e->nr_gens),
				   e->nr_gens, e->threshold, e->policy)) {
			ret = pb_error_errno(path, "cannot make a record for it");
			goto out;
		}
		for (unsigned int age = 0; age < e->nr_gens; age++)
			pb_record_mark(&tmp, pb_plane(&tmp, age), &gens[age]);
		pb_hdr(&tmp)->runs = htole64(e->runs);
		pb_hdr(&tmp)->last_update = htole64(e->last_update);
		pb_record_seal(&tmp);
		ret = pb_stamp(&f, &params);
	}
out:
	if (!ret) {
		report(path, &st, exact, e, a->dry_run);
		if (exact)
			a->exact++;
		else
			a->carried++;
	}
	pb_record_free(&tmp);
	for (unsigned int i = 0; i < PBITMAP_MAX_PLANES; i++)
		pb_byte_ranges_free(&gens[i]);
	if (t.f)
		pb_target_free(&t);
	pb_close(&f);
	return ret;
}

int pb_cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "dereference", no_argument, NULL, 'L' },
		{ "break-links", no_argument, NULL, 'B' },
		{ "stdin", no_argument, NULL, 'S' },
		{ "summary", no_argument, NULL, 's' },
		{ 0 }
	};
	struct import_args a = { 0 };
	struct pb_profile p;
	unsigned int flags = 0;
	bool from_stdin = false;
	int c, ret;

	while ((c = pb_getopt(argc, argv, "nL", opts)) != -1) {
		switch (c) {
		case 'S':
			from_stdin = true;
			break;
		case 's':
			a.summary = true;
			break;
		case 'n':
			a.dry_run = true;
			break;
		case 'L':
			flags |= PB_OPEN_FOLLOW;
			break;
		case 'B':
			flags |= PB_OPEN_BREAK_LINKS;
			break;
		default:
			return pb_option_exit(c);
		}
	}
	if (argc - optind < (from_stdin ? 1 : 2))
		return pb_usage_error("import: PROFILE and at least one FILE expected");
	if (a.summary && !from_stdin)
		return pb_usage_error("import: --summary goes with --stdin");
	a.name = argv[optind++];
	if (from_stdin && !strcmp(a.name, "-"))
		return pb_usage_error("import: the profile cannot be stdin with --stdin");
	if (pb_profile_load(a.name, &p))
		return PB_EXIT_FAIL;
	a.p = &p;
	ret = pb_for_each_file(argc, argv, from_stdin, flags, import_one, &a);
	if (a.summary)
		fprintf(stderr, "%s: %s: %lu files given their own build's pages, %lu carried from "
			"another build, %lu refused, %lu other paths passed over\n", pb_progname,
			a.name, a.exact, a.carried, a.refused, a.other);
	pb_profile_free(&p);
	return ret;
}
