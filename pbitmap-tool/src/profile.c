// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The portable profile as text (docs/FORMAT.md, "Portable profiles").
 *
 * A profile is what a bitmap says without the file it lives in: the
 * generations as byte ranges (independent of granule and page size), the
 * policy, and the identity and anchors of the file they were learned on,
 * so that another machine, or another build, can take them.  Text, so
 * that it can be kept in a source package, diffed and reviewed.
 *
 * The parser is a pure function of its input and checks everything: the
 * fuzz target calls it on arbitrary bytes, and `import` refuses a profile
 * before touching any file.
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

/* ---- byte ranges -------------------------------------------------------- */

int pb_byte_ranges_add(struct pb_byte_ranges *r, uint64_t start, uint64_t len)
{
	struct pb_byte_range *last = r->n ? &r->v[r->n - 1] : NULL;
	void *v;

	if (!len)
		return 0;
	if (last && start >= last->start && start <= last->start + last->len) {
		if (start + len > last->start + last->len)
			last->len = start + len - last->start;
		return 0;
	}
	v = pb_grow(r->v, r->n, &r->cap, sizeof(*r->v), 16);
	if (!v)
		return PB_FAIL;
	r->v = v;
	r->v[r->n++] = (struct pb_byte_range){ start, len };
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct pb_byte_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void pb_byte_ranges_normalise(struct pb_byte_ranges *r)
{
	size_t out = 0;

	if (r->n < 2)
		return;
	qsort(r->v, r->n, sizeof(*r->v), range_cmp);
	for (size_t i = 1; i < r->n; i++) {
		struct pb_byte_range *last = &r->v[out];
		uint64_t end = last->start + last->len;

		if (r->v[i].start <= end) {
			if (r->v[i].start + r->v[i].len > end)
				last->len = r->v[i].start + r->v[i].len - last->start;
		} else {
			r->v[++out] = r->v[i];
		}
	}
	r->n = out + 1;
}

uint64_t pb_byte_ranges_bytes(const struct pb_byte_ranges *r)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < r->n; i++)
		sum += r->v[i].len;
	return sum;
}

void pb_byte_ranges_free(struct pb_byte_ranges *r)
{
	free(r->v);
	*r = (struct pb_byte_ranges){ 0 };
}

int pb_record_ranges(const struct pb_record *r, unsigned int age, struct pb_byte_ranges *out)
{
	const struct pbitmap_header *h = pb_hdr(r);
	uint64_t pages = pb_nr_pages(r), size = le64toh(h->content_size);
	unsigned int shift = h->page_shift;
	uint64_t first, count, n = 0;

	while (pb_next_run(pb_plane(r, age), pages, n, &first, &count)) {
		uint64_t start = first << shift, end = (first + count) << shift;

		if (end > size)
			end = size;
		if (pb_byte_ranges_add(out, start, end - start))
			return PB_FAIL;
		n = first + count;
	}
	return 0;
}

void pb_record_mark(struct pb_record *r, unsigned char *plane, const struct pb_byte_ranges *ranges)
{
	unsigned int shift = pb_page_shift(r);
	uint64_t pages = pb_nr_pages(r);

	for (size_t i = 0; i < ranges->n; i++) {
		const struct pb_byte_range *b = &ranges->v[i];

		if (!b->len)
			continue;
		for (uint64_t g = b->start >> shift; g <= (b->start + b->len - 1) >> shift &&
		     g < pages; g++)
			pb_set_bit(plane, g);
	}
}

/* ---- entries ----------------------------------------------------------- */

void pb_anchors_free(struct pb_anchors *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i].name);
	free(a->v);
	*a = (struct pb_anchors){ 0 };
}

void pb_profile_entry_free(struct pb_profile_entry *e)
{
	free(e->path);
	for (unsigned int i = 0; i < PBITMAP_MAX_PLANES; i++)
		pb_byte_ranges_free(&e->gen[i]);
	pb_anchors_free(&e->anchors);
	memset(e, 0, sizeof(*e));
}

void pb_profile_free(struct pb_profile *p)
{
	for (size_t i = 0; i < p->n; i++)
		pb_profile_entry_free(&p->v[i]);
	free(p->v);
	*p = (struct pb_profile){ 0 };
}

bool pb_profile_is_one(const void *buf, size_t len)
{
	size_t m = strlen(PB_PROFILE_MAGIC);

	return len > m && !memcmp(buf, PB_PROFILE_MAGIC, m) &&
	       (((const char *)buf)[m] == ' ' || ((const char *)buf)[m] == '\t');
}

bool pb_profile_policy(const char *word, uint32_t *policy)
{
	if (!strcmp(word, "never"))
		*policy = PBITMAP_F_NO_LEARN;
	else if (!strcmp(word, "owner"))
		*policy = 0;
	else if (!strcmp(word, "every"))
		*policy = PBITMAP_F_LEARN_EVERY;
	else
		return false;
	return true;
}

/* ---- writing ------------------------------------------------------------ */

/* A path or name: bytes below 0x21, 0x7f and above, '\' and '#' as \ooo. */
static void put_escaped(FILE *out, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c <= ' ' || *c >= 0x7f || *c == '\\' || *c == '#')
			fprintf(out, "\\%03o", *c);
		else
			putc(*c, out);
	}
}

static const char *const kind_word[] = {
	[PB_ANCHOR_SECTION] = "section",
	[PB_ANCHOR_SYMBOL] = "symbol",
	[PB_ANCHOR_FUNCTION] = "function",
};

/* Ranges per `gen` line, so that lines stay short enough to read and diff. */
#define RANGES_PER_LINE	8

static void write_entry(FILE *out, const struct pb_profile_entry *e)
{
	fputs("\nfile ", out);
	put_escaped(out, e->path);
	fprintf(out, "\nkind %s\nsize %" PRIu64 "\nsha256 %s\n", e->elf ? "elf" : "data",
		e->size, e->sha256);
	if (e->build_id[0])
		fprintf(out, "build-id %s\n", e->build_id);
	fprintf(out, "granule %u\nlearn %s\nthreshold %u\ngenerations %u\nruns %" PRIu64
		"\nlast-update %" PRIu64 "\n", 1u << e->granule_shift,
		pb_learn_policy(e->policy), e->threshold, e->nr_gens, e->runs, e->last_update);
	for (unsigned int age = 0; age < e->nr_gens; age++) {
		const struct pb_byte_ranges *r = &e->gen[age];

		if (!r->n)
			fprintf(out, "gen %u\n", age);
		for (size_t i = 0; i < r->n; i++) {
			if (i % RANGES_PER_LINE == 0)
				fprintf(out, "%sgen %u", i ? "\n" : "", age);
			fprintf(out, " %" PRIu64 "+%" PRIu64, r->v[i].start, r->v[i].len);
		}
		if (r->n)
			putc('\n', out);
	}
	for (size_t i = 0; i < e->anchors.n; i++) {
		const struct pb_anchor *a = &e->anchors.v[i];

		fprintf(out, "anchor %s ", kind_word[a->kind]);
		if (a->kind == PB_ANCHOR_FUNCTION)
			fprintf(out, "%" PRIu32 " %016" PRIx64, a->ord, a->hash);
		else
			put_escaped(out, a->name);
		fprintf(out, " %" PRIu64 " %" PRIu64 "\n", a->offset, a->size);
	}
	fputs("end\n", out);
}

int pb_profile_write(FILE *out, const struct pb_profile *p)
{
	fprintf(out, "%s %d\n", PB_PROFILE_MAGIC, PB_PROFILE_VERSION);
	fputs("# pbitmap portable profile: see pbitmap(1), export and import.\n", out);
	for (size_t i = 0; i < p->n; i++)
		write_entry(out, &p->v[i]);
	if (fflush(out) || ferror(out)) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return 0;
}

/* ---- parsing ------------------------------------------------------------ */

struct parser {
	const char *p, *end;
	unsigned long line;
	char *buf;		/* the current line, NUL-terminated, words split */
	char *words[8 + 2 * RANGES_PER_LINE * 64];
	size_t nr_words;
};

#define MAX_WORDS (sizeof(((struct parser *)0)->words) / sizeof(char *))

/*
 * The next non-blank, non-comment line, split into words.  Returns 1, 0 at
 * the end, or -1 with *@why set.
 */
static int next_line(struct parser *ps, const char **why)
{
	while (ps->p < ps->end) {
		const char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
		size_t len = nl ? (size_t)(nl - ps->p) : (size_t)(ps->end - ps->p);
		char *s;

		ps->line++;
		if (len > PB_PROFILE_MAX_LINE) {
			*why = "line too long";
			return -1;
		}
		free(ps->buf);
		ps->buf = malloc(len + 1);
		if (!ps->buf) {
			*why = "out of memory";
			return -1;
		}
		memcpy(ps->buf, ps->p, len);
		ps->buf[len] = '\0';
		ps->p += len + (nl ? 1 : 0);
		if (memchr(ps->buf, '\0', len)) {
			*why = "a NUL byte in the text";
			return -1;
		}
		ps->nr_words = 0;
		for (s = ps->buf; *s;) {
			while (*s == ' ' || *s == '\t' || *s == '\r')
				*s++ = '\0';
			if (!*s || *s == '#')
				break;
			if (ps->nr_words == MAX_WORDS) {
				*why = "too many words on a line";
				return -1;
			}
			ps->words[ps->nr_words++] = s;
			while (*s && *s != ' ' && *s != '\t' && *s != '\r')
				s++;
		}
		if (*s == '#')
			*s = '\0';
		if (ps->nr_words)
			return 1;
	}
	return 0;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

static bool parse_hex(const char *s, size_t min, size_t max, bool even)
{
	size_t n = strlen(s);

	if (n < min || n > max || (even && n % 2))
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s) || isupper((unsigned char)*s))
			return false;
	return true;
}

/* Undo put_escaped(), in place.  False on a malformed escape or a NUL. */
static bool unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (*s != '\\') {
			*out++ = *s;
			continue;
		}
		if (s[1] < '0' || s[1] > '3' || s[2] < '0' || s[2] > '7' ||
		    s[3] < '0' || s[3] > '7')
			return false;
		*out = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
		if (!*out)
			return false;
		out++;
		s += 3;
	}
	*out = '\0';
	return true;
}

/* Fields of an entry seen so far, for the checks at `end`. */
enum {
	SEEN_KIND = 1 << 0, SEEN_SIZE = 1 << 1, SEEN_SHA = 1 << 2, SEEN_LEARN = 1 << 3,
	SEEN_THRESHOLD = 1 << 4, SEEN_GENS = 1 << 5, SEEN_RUNS = 1 << 6,
	SEEN_UPDATE = 1 << 7, SEEN_GRANULE = 1 << 8, SEEN_BUILD_ID = 1 << 9,
	SEEN_REQUIRED = SEEN_KIND | SEEN_SIZE | SEEN_SHA | SEEN_LEARN | SEEN_THRESHOLD | SEEN_GENS,
};

static const char *parse_gen(struct parser *ps, struct pb_profile_entry *e)
{
	uint64_t age, start, len;

	if (!parse_u64(ps->words[1], &age) || age >= e->nr_gens)
		return "gen: the age is not below generations";
	for (size_t i = 2; i < ps->nr_words; i++) {
		struct pb_byte_ranges *r = &e->gen[age];
		char *plus = strchr(ps->words[i], '+');

		if (!plus)
			return "gen: a range is START+LEN";
		*plus = '\0';
		if (!parse_u64(ps->words[i], &start) || !parse_u64(plus + 1, &len) || !len)
			return "gen: a range is START+LEN, decimal, LEN above 0";
		if (start > e->size || len > e->size - start)
			return "gen: a range ends past the file's size";
		if (r->n && start <= r->v[r->n - 1].start + r->v[r->n - 1].len)
			return "gen: ranges must be ascending and apart";
		if (pb_byte_ranges_add(r, start, len))
			return "out of memory";
	}
	return NULL;
}

static const char *parse_anchor(struct parser *ps, struct pb_profile_entry *e)
{
	struct pb_anchor a = { 0 };
	uint64_t ord;
	void *v;

	if (!(e->elf))
		return "anchor: only an ELF file has anchors (kind elf first)";
	if (!strcmp(ps->words[1], "function")) {
		if (ps->nr_words != 6)
			return "anchor function ORD HASH OFFSET SIZE";
		a.kind = PB_ANCHOR_FUNCTION;
		if (!parse_u64(ps->words[2], &ord) || ord > UINT32_MAX)
			return "anchor function: bad ORD";
		a.ord = (uint32_t)ord;
		if (!parse_hex(ps->words[3], 16, 16, true))
			return "anchor function: HASH is 16 lowercase hex digits";
		a.hash = strtoull(ps->words[3], NULL, 16);
	} else if (!strcmp(ps->words[1], "section") || !strcmp(ps->words[1], "symbol")) {
		if (ps->nr_words != 5)
			return "anchor section|symbol NAME OFFSET SIZE";
		a.kind = ps->words[1][1] == 'e' ? PB_ANCHOR_SECTION : PB_ANCHOR_SYMBOL;
		if (!unescape(ps->words[2]) || !ps->words[2][0])
			return "anchor: bad NAME";
	} else {
		return "anchor: expected section, symbol or function";
	}
	if (!parse_u64(ps->words[ps->nr_words - 2], &a.offset) ||
	    !parse_u64(ps->words[ps->nr_words - 1], &a.size) || !a.size ||
	    a.offset > e->size || a.size > e->size - a.offset)
		return "anchor: OFFSET and SIZE must lie within the file";
	if (a.kind != PB_ANCHOR_FUNCTION) {
		a.name = strdup(ps->words[2]);
		if (!a.name)
			return "out of memory";
	}
	v = pb_grow(e->anchors.v, e->anchors.n, &e->anchors.cap, sizeof(a), 16);
	if (!v) {
		free(a.name);
		return "out of memory";
	}
	e->anchors.v = v;
	e->anchors.v[e->anchors.n++] = a;
	return NULL;
}

/* One `KEY VALUE` line of an entry's header. */
static const char *parse_field(struct parser *ps, struct pb_profile_entry *e, unsigned int *seen)
{
	const char *key = ps->words[0], *val = ps->words[1];
	uint64_t v;

	if (ps->nr_words != 2)
		return "expected KEY VALUE";
#define ONCE(bit) do { if (*seen & (bit)) return "a field given twice"; *seen |= (bit); } while (0)
	if (!strcmp(key, "kind")) {
		ONCE(SEEN_KIND);
		if (strcmp(val, "elf") && strcmp(val, "data"))
			return "kind is elf or data";
		e->elf = !strcmp(val, "elf");
	} else if (!strcmp(key, "size")) {
		ONCE(SEEN_SIZE);
		if (!parse_u64(val, &e->size))
			return "size: a decimal number";
	} else if (!strcmp(key, "sha256")) {
		ONCE(SEEN_SHA);
		if (!parse_hex(val, 64, 64, true))
			return "sha256: 64 lowercase hex digits";
		memcpy(e->sha256, val, 65);
	} else if (!strcmp(key, "build-id")) {
		ONCE(SEEN_BUILD_ID);
		if (!parse_hex(val, 2, 2 * PB_BUILD_ID_MAX, true))
			return "build-id: lowercase hex, an even number of digits";
		strcpy(e->build_id, val);
	} else if (!strcmp(key, "granule")) {
		ONCE(SEEN_GRANULE);
		if (!parse_u64(val, &v) || v < (1u << PBITMAP_MIN_PAGE_SHIFT) ||
		    v > (1u << PBITMAP_MAX_PAGE_SHIFT) || (v & (v - 1)))
			return "granule: a power of two from 4096 to 1 GiB";
		e->granule_shift = (unsigned int)__builtin_ctzll(v);
	} else if (!strcmp(key, "learn")) {
		ONCE(SEEN_LEARN);
		if (!pb_profile_policy(val, &e->policy))
			return "learn: never, owner or every";
	} else if (!strcmp(key, "threshold")) {
		ONCE(SEEN_THRESHOLD);
		if (!parse_u64(val, &v) || !v || v > PBITMAP_MAX_PLANES)
			return "threshold: 1 to 16";
		e->threshold = (unsigned int)v;
	} else if (!strcmp(key, "generations")) {
		ONCE(SEEN_GENS);
		if (!parse_u64(val, &v) || !v || v > PBITMAP_MAX_PLANES)
			return "generations: 1 to 16";
		e->nr_gens = (unsigned int)v;
	} else if (!strcmp(key, "runs")) {
		ONCE(SEEN_RUNS);
		if (!parse_u64(val, &e->runs))
			return "runs: a decimal number";
	} else if (!strcmp(key, "last-update")) {
		ONCE(SEEN_UPDATE);
		if (!parse_u64(val, &e->last_update))
			return "last-update: seconds since the Epoch";
	} else {
		return "unknown field";
	}
#undef ONCE
	return NULL;
}

/* The lines of one entry, after its `file` line, up to and with `end`. */
static const char *parse_entry(struct parser *ps, struct pb_profile_entry *e)
{
	unsigned int seen = 0;
	const char *why = NULL;
	int r;

	e->granule_shift = PBITMAP_MIN_PAGE_SHIFT;
	while ((r = next_line(ps, &why)) > 0) {
		const char *key = ps->words[0];

		if (!strcmp(key, "end")) {
			if (ps->nr_words != 1)
				return "end takes nothing";
			if ((seen & SEEN_REQUIRED) != SEEN_REQUIRED)
				return "an entry needs kind, size, sha256, learn, threshold "
				       "and generations";
			if (e->threshold > e->nr_gens)
				return "threshold above generations";
			if (!e->elf && (seen & SEEN_BUILD_ID))
				return "a data file has no build-id";
			return NULL;
		}
		if (!strcmp(key, "gen")) {
			if (!(seen & SEEN_GENS) || !(seen & SEEN_SIZE))
				return "gen before size and generations";
			if (ps->nr_words < 2)
				return "gen AGE [START+LEN...]";
			why = parse_gen(ps, e);
		} else if (!strcmp(key, "anchor")) {
			if (!(seen & SEEN_SIZE) || !(seen & SEEN_KIND))
				return "anchor before kind and size";
			if (ps->nr_words < 2)
				return "anchor KIND ...";
			why = parse_anchor(ps, e);
		} else if (!strcmp(key, "file")) {
			return "file inside an entry (end missing)";
		} else {
			why = parse_field(ps, e, &seen);
		}
		if (why)
			return why;
	}
	return r < 0 ? why : "the text ends inside an entry (end missing)";
}

const char *pb_profile_parse(const char *text, size_t len, struct pb_profile *p,
			     unsigned long *line)
{
	struct parser ps = { .p = text, .end = text + len };
	const char *why = NULL;
	uint64_t version;
	int r;

	*p = (struct pb_profile){ 0 };
	*line = 0;
	if (len > PB_PROFILE_MAX_BYTES)
		return "larger than 256 MiB";
	if (!pb_profile_is_one(text, len))
		return "not a pbitmap profile (no \"" PB_PROFILE_MAGIC " 1\" first)";
	r = next_line(&ps, &why);
	if (r <= 0 || ps.nr_words != 2 ||
	    strcmp(ps.words[0], PB_PROFILE_MAGIC)) {
		free(ps.buf);
		return r < 0 ? why : "not a pbitmap profile (no \"" PB_PROFILE_MAGIC " 1\" first)";
	}
	if (!parse_u64(ps.words[1], &version) || version != PB_PROFILE_VERSION) {
		*line = ps.line;
		free(ps.buf);
		return "a profile version this pbitmap does not know";
	}
	while (!why && (r = next_line(&ps, &why)) > 0) {
		struct pb_profile_entry *e;
		void *v;

		if (strcmp(ps.words[0], "file") || ps.nr_words != 2) {
			why = "expected file PATH";
			break;
		}
		v = pb_grow(p->v, p->n, &p->cap, sizeof(*p->v), 4);
		if (!v) {
			why = "out of memory";
			break;
		}
		p->v = v;
		e = &p->v[p->n++];
		memset(e, 0, sizeof(*e));
		if (!unescape(ps.words[1]) || !ps.words[1][0]) {
			why = "file: bad PATH";
			break;
		}
		e->path = strdup(ps.words[1]);
		if (!e->path)
			why = "out of memory";
		else
			why = parse_entry(&ps, e);
	}
	if (!why && !p->n)
		why = "no file in the profile";
	if (why) {
		*line = ps.line;
		pb_profile_free(p);
	}
	free(ps.buf);
	return why;
}
