// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap: add, show, update, verify and remove predictive page bitmaps.
 * See pbitmap(1).  This file holds the verb table; each verb lives in its
 * own module (see cli.h for the map).
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "pbitmap.h"
#include "cli.h"

#ifndef PBITMAP_VERSION_STRING
#define PBITMAP_VERSION_STRING "unknown"
#endif

struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;	/* after the verb; lines after a '\n' are indented */
	const char *summary;
};

static const struct verb verbs[] = {
	{ "add", pb_cmd_add,
	  "[-g N] [-t T] [--page-shift S] [--learn[=never|owner|every]|--no-learn] [--xattr-max B]\n"
	  "[--plan-size B] [-L] [--break-links] [--stdin [--summary]] FILE...",
	  "add an empty bitmap (idempotent)" },
	{ "strip", pb_cmd_strip, "[-L] [--break-links] [--stdin] FILE...",
	  "remove the bitmap; ELF files become byte-identical" },
	{ "undo", pb_cmd_undo, "[-o OUT] FILE",
	  "write the original bytes to stdout or OUT" },
	{ "digest", pb_cmd_digest, "[--algo A] FILE...",
	  "digest of the original bytes (default sha256)" },
	{ "show", pb_cmd_show, "[--json] FILE...", "print the bitmap" },
	{ "verify", pb_cmd_verify, "FILE...", "check checksum and bounds" },
	{ "plan", pb_cmd_plan, "(--clear PROGRAM | PROGRAM FILE...)",
	  "write PROGRAM's start-up plan: FILEs, read at its exec in this order" },
	{ "set", pb_cmd_set, "(--pages L|--ranges L) [--plane AGE] [-L] FILE...",
	  "mark pages in the bitmap" },
	{ "clear", pb_cmd_clear, "(--pages L|--ranges L|--all) [--plane AGE] [-L] FILE...",
	  "unmark pages" },
	{ "merge", pb_cmd_merge, "[--min K] DEST SRC...",
	  "combine the generations of files or profiles into DEST" },
	{ "export", pb_cmd_export, "[-o PROFILE] [-L] (--stdin|FILE...)",
	  "write the bitmaps as a portable profile" },
	{ "import", pb_cmd_import, "[-n] [-L] [--break-links] PROFILE (--stdin [--summary]|FILE...)",
	  "apply a profile, carried into another build by its anchors" },
	{ "record", pb_cmd_record, "[--window SEC] -- CMD [ARG...]",
	  "learn the pages CMD uses (by ptrace)" },
	{ "prefetch", pb_cmd_prefetch, "FILE...", "start reading the marked pages" },
	{ "run", pb_cmd_run, "-- CMD [ARG...]",
	  "prefetch CMD, its libraries and file arguments, then exec it" },
	{ "status", pb_cmd_status, "[--status FILE]",
	  "what prefetches here: the kernel or pbitmapd, and pbitmapd's counters" },
	{ "device-gap", pb_cmd_device_gap, "[--set] [--depth N] [PATH]",
	  "measure what a read request costs on PATH's device; the join gap" },
	{ "stamp", pb_cmd_stamp, "[--root DIR] [--dbpath DIR] (--rpm PKG...|--rpm-all)",
	  "add bitmaps to what rpm packages installed" },
	{ "rpm-verify", pb_cmd_rpm_verify, "[--root DIR] [--dbpath DIR] (PKG...|-a)",
	  "rpm -V, with stamped files checked as packaged" },
};

#define NR_VERBS (sizeof(verbs) / sizeof(verbs[0]))

static const char common_text[] =
	"Every verb also takes -q (--quiet), -v (--verbose) and -h (--help).\n"
	"Numbers are decimal.  Exit status: 0 done, 1 error (files left\n"
	"untouched), 2 usage, 3 some files skipped (hard links, locked, signed,\n"
	"immutable, read-only); record and run: CMD's.  See pbitmap(1).\n";

/* @text with every line after the first indented by @indent spaces. */
static void put_indented(const char *text, int indent)
{
	for (; *text; text++) {
		putchar(*text);
		if (*text == '\n')
			printf("%*s", indent, "");
	}
}

static void print_usage(void)
{
	printf("usage: pbitmap VERB [OPTION...] FILE...\n"
	       "       pbitmap --help | --version\n"
	       "\n"
	       "Predictive page bitmaps: remember which pages of a program, library or\n"
	       "mapped data file are needed at start-up, and fetch them in one batch.\n"
	       "\n");
	for (size_t i = 0; i < NR_VERBS; i++) {
		const struct verb *v = &verbs[i];
		int width = 2 + (int)strlen(v->name) + 1 + (int)strlen(v->synopsis);

		printf("  %s ", v->name);
		put_indented(v->synopsis, 2 + (int)strlen(v->name) + 1);
		if (strchr(v->synopsis, '\n') || width > 31)
			printf("\n%33s%s\n", "", v->summary);
		else
			printf("%*s%s\n", 33 - width, "", v->summary);
	}
	printf("\n%s", common_text);
}

static const struct verb *find_verb(const char *name)
{
	for (size_t i = 0; i < NR_VERBS; i++)
		if (!strcmp(name, verbs[i].name))
			return &verbs[i];
	return NULL;
}

void pb_print_verb_help(const char *name)
{
	const struct verb *v = find_verb(name);

	if (!v) {
		print_usage();
		return;
	}
	printf("usage: pbitmap %s ", v->name);
	put_indented(v->synopsis, (int)strlen("usage: pbitmap  ") + (int)strlen(v->name));
	printf("\n\n%c%s.\n\n%s", toupper((unsigned char)v->summary[0]), v->summary + 1,
	       common_text);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;
	const struct verb *verb;

	if (!name)
		return pb_usage_error("no VERB given");
	if (!strcmp(name, "help")) {
		if (argc > 2 && !find_verb(argv[2]))
			return pb_usage_error("help: unknown verb '%s'", argv[2]);
		if (argc > 2)
			pb_print_verb_help(argv[2]);
		else
			print_usage();
		return pb_flush_stdout();
	}
	if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
		print_usage();
		return pb_flush_stdout();
	}
	if (!strcmp(name, "-V") || !strcmp(name, "--version")) {
		printf("pbitmap %s (format version %d)\n", PBITMAP_VERSION_STRING,
		       PBITMAP_VERSION_PLAN);
		return pb_flush_stdout();
	}
	verb = find_verb(name);
	if (!verb)
		return pb_usage_error("unknown verb '%s'", name);
	/* Each verb reads its own -h/--help, -q, -v (pb_getopt()). */
	optind = 1;
	return verb->run(argc - 1, argv + 1);
}
