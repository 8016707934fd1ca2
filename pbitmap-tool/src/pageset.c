// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A sparse set of page indices, for what `pbitmap record` observes in one
 * file.  A flat bitmap sized by the highest index seen would let a program
 * that maps 8 KiB of a sparse file at a 4 TiB offset cost 128 MiB of
 * memory (and at 2^50 more than there is).  Here memory follows the pages
 * actually seen: the set is a sorted array of fixed-size chunks, each a
 * bitmap of PB_CHUNK_PAGES consecutive pages, allocated on first use.
 * Observations come in ascending runs (one mapping after the other), so a
 * cursor on the last chunk used makes the common case a constant-time
 * lookup.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pbitmap.h"

static size_t chunk_find(const struct pb_pageset *s, uint64_t base, bool *found)
{
	size_t lo = 0, hi = s->nr;

	if (s->last < s->nr && s->chunks[s->last].base == base) {
		*found = true;
		return s->last;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->chunks[mid].base < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < s->nr && s->chunks[lo].base == base;
	return lo;
}

int pb_pageset_add(struct pb_pageset *s, uint64_t page)
{
	uint64_t base = page / PB_CHUNK_PAGES, bit = page % PB_CHUNK_PAGES;
	bool found;
	size_t at = chunk_find(s, base, &found);

	if (!found) {
		struct pb_page_chunk *n = pb_grow(s->chunks, s->nr, &s->cap, sizeof(*n), 4);

		if (!n)
			return PB_FAIL;
		s->chunks = n;
		memmove(&s->chunks[at + 1], &s->chunks[at], (s->nr - at) * sizeof(s->chunks[0]));
		memset(&s->chunks[at], 0, sizeof(s->chunks[0]));
		s->chunks[at].base = base;
		s->nr++;
	}
	s->last = at;
	s->chunks[at].bits[bit / 64] |= UINT64_C(1) << (bit % 64);
	return 0;
}

bool pb_pageset_next(const struct pb_pageset *s, uint64_t from, uint64_t *page)
{
	bool found;
	size_t at = chunk_find(s, from / PB_CHUNK_PAGES, &found);
	uint64_t bit = found ? from % PB_CHUNK_PAGES : 0;

	for (; at < s->nr; at++, bit = 0) {
		const struct pb_page_chunk *c = &s->chunks[at];

		for (uint64_t w = bit / 64; w < PB_CHUNK_PAGES / 64; w++) {
			uint64_t word = c->bits[w];

			if (w == bit / 64)
				word &= ~UINT64_C(0) << (bit % 64);
			if (word) {
				*page = c->base * PB_CHUNK_PAGES + w * 64 +
					(uint64_t)__builtin_ctzll(word);
				return true;
			}
		}
	}
	return false;
}

uint64_t pb_pageset_count(const struct pb_pageset *s)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nr; i++)
		for (size_t w = 0; w < PB_CHUNK_PAGES / 64; w++)
			n += (uint64_t)__builtin_popcountll(s->chunks[i].bits[w]);
	return n;
}

void pb_pageset_free(struct pb_pageset *s)
{
	free(s->chunks);
	*s = (struct pb_pageset){ 0 };
}
