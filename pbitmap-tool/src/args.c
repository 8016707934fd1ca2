// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap: parsing option arguments: numbers, byte sizes, page and byte
 * ranges.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "pbitmap.h"
#include "cli.h"

bool pb_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return !errno && !*end && *out <= max;
}

/* A byte count with an optional K, M, G or T suffix (powers of 1024). */
bool pb_parse_size(const char *s, const char **rest, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return false;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return false;
	*out = (uint64_t)v << shift;
	*rest = end;
	return true;
}

static int add_range(struct pb_ranges *a, uint64_t first, uint64_t last, bool bytes)
{
	struct pb_range *r = realloc(a->v, (a->n + 1) * sizeof(*r));

	if (!r)
		return -1;
	a->v = r;
	a->v[a->n++] = (struct pb_range){ first, last, bytes };
	return 0;
}

/*
 * One item of a --pages or --ranges list.  Pages: "N", "N-M" (inclusive) or
 * "N+COUNT".  Bytes: "START-END" (END exclusive) or "START+LEN", with K, M,
 * G or T suffixes.  Stores the inclusive first and last unit.
 */
static const char *parse_item(const char *s, bool bytes, uint64_t *first, uint64_t *last)
{
	const char *rest;
	uint64_t second;
	char op;

	if (!pb_parse_size(s, &rest, first) || (!bytes && rest[-1] > '9'))
		return NULL;
	op = *rest;
	if (op != '-' && op != '+') {
		*last = *first;
		return bytes ? NULL : rest;	/* a byte range needs an end */
	}
	if (!pb_parse_size(rest + 1, &rest, &second) || (!bytes && rest[-1] > '9'))
		return NULL;
	if (op == '+') {
		if (!second || __builtin_add_overflow(*first, second - 1, last))
			return NULL;
	} else if (bytes) {
		if (second <= *first)
			return NULL;
		*last = second - 1;
	} else {
		if (second < *first)
			return NULL;
		*last = second;
	}
	return rest;
}

bool pb_parse_ranges(struct pb_ranges *a, const char *list, bool bytes)
{
	const char *s = list;

	while (*s) {
		uint64_t first, last;

		s = parse_item(s, bytes, &first, &last);
		if (!s || add_range(a, first, last, bytes))
			return false;
		if (*s == ',')
			s++;
		else if (*s)
			return false;
	}
	return a->n > 0;
}
