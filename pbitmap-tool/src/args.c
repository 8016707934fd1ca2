// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap: the options every verb takes (pb_getopt()), and parsing option
 * arguments: numbers, byte sizes, page and byte ranges.  Numbers are
 * decimal only: "010" is ten, as a user who pads a page number expects,
 * not eight; "0x10" is refused.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbitmap.h"
#include "cli.h"

bool pb_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
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
	v = strtoull(s, &end, 10);
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

/*
 * Decimal seconds: digits with an optional fraction ("2", "0.5").  Not
 * strtod()'s whole language: no sign, exponent, hex, "inf" or "nan".
 */
bool pb_parse_seconds(const char *s, double *out)
{
	static const char digits[] = "0123456789";
	const char *p = s + strspn(s, digits);

	if (p == s)
		return false;
	if (*p == '.') {
		const char *fraction = p + 1;

		p = fraction + strspn(fraction, digits);
		if (p == fraction)
			return false;
	}
	if (*p)
		return false;
	*out = strtod(s, NULL);
	return isfinite(*out);
}

/* ---- the options every verb takes ----------------------------------------- */

static const struct option common_options[] = {
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
};

#define NR_COMMON (sizeof(common_options) / sizeof(common_options[0]))
#define MAX_OPTIONS 32

/* Report what getopt_long() refused (it prints nothing itself: opterr = 0). */
static int bad_option(int c, char **argv)
{
	const char *word = optind > 0 ? argv[optind - 1] : "";
	bool is_long = word[0] == '-' && word[1] == '-';

	if (c == ':' && is_long)
		return pb_usage_error("%s: option '%s' needs an argument", argv[0], word);
	if (c == ':')
		return pb_usage_error("%s: option '-%c' needs an argument", argv[0], optopt);
	if (!is_long && optopt)
		return pb_usage_error("%s: unknown option '-%c'", argv[0], optopt);
	return pb_usage_error("%s: unknown option '%s'", argv[0], word);
}

int pb_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	static struct option all[MAX_OPTIONS + NR_COMMON + 1];
	char optstring[64];
	size_t n = 0;
	bool in_order = *shortopts == '+';
	int c;

	for (; longopts && longopts[n].name && n < MAX_OPTIONS; n++)
		all[n] = longopts[n];
	memcpy(all + n, common_options, sizeof(common_options));
	all[n + NR_COMMON] = (struct option){ 0 };
	/* ':' first: a missing argument is told from an unknown option. */
	snprintf(optstring, sizeof(optstring), "%s:%sqvh", in_order ? "+" : "",
		 shortopts + in_order);
	opterr = 0;
	for (;;) {
		c = getopt_long(argc, argv, optstring, all, NULL);
		switch (c) {
		case 'q':
			pb_quiet = 1;
			break;
		case 'v':
			pb_verbose = 1;
			break;
		case 'h':
			pb_print_verb_help(argv[0]);
			return PB_OPT_HELP;
		case '?':
		case ':':
			bad_option(c, argv);
			return PB_OPT_ERROR;
		default:
			return c;
		}
	}
}

int pb_option_exit(int c)
{
	return c == PB_OPT_HELP ? pb_flush_stdout() : PB_EXIT_USAGE;
}
