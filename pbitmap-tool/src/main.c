// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap: add, show, update, verify and remove predictive page bitmaps.
 * See pbitmap(1).  This file holds the verb table; each verb lives in its
 * own module (see cli.h for the map).
 */
#include <stdio.h>
#include <string.h>
#include <getopt.h>

#include "pbitmap.h"
#include "cli.h"

#ifndef PBITMAP_VERSION_STRING
#define PBITMAP_VERSION_STRING "unknown"
#endif

static const char usage_text[] =
	"usage: pbitmap VERB [OPTION...] FILE...\n"
	"\n"
	"Predictive page bitmaps: remember which pages of a program, library or\n"
	"mapped data file are needed at start-up, and fetch them in one batch.\n"
	"\n"
	"  add [-g N] [-t T] [--page-shift S] [--no-learn|--learn] [--xattr-max B]\n"
	"      [-L] [--break-links] [--stdin [--summary]] FILE...\n"
	"                                 add an empty bitmap (idempotent)\n"
	"  strip [--break-links] [--stdin] FILE...\n"
	"                                 remove it; ELF files become byte-identical\n"
	"  undo [-o OUT] FILE             write the original bytes to stdout or OUT\n"
	"  digest [--algo A] FILE...      digest of the original bytes (default sha256)\n"
	"  show [--json] FILE...          print the bitmap\n"
	"  verify FILE...                 check checksum and bounds\n"
	"  set (--pages L|--ranges L) [--plane AGE] FILE...\n"
	"  clear (--pages L|--ranges L|--all) [--plane AGE] FILE...\n"
	"  merge DEST SRC...              OR the generations of SRC into DEST\n"
	"  record [--window SEC] -- CMD [ARG...]\n"
	"                                 learn the pages CMD uses (by ptrace)\n"
	"  prefetch [-v] FILE...          start reading the marked pages\n"
	"  run [-v] -- CMD [ARG...]       prefetch CMD and its libraries, then exec it\n"
	"  stamp [--root DIR] [--dbpath DIR] (--rpm PKG...|--rpm-all)\n"
	"                                 add bitmaps to what rpm packages installed\n"
	"  rpm-verify [--root DIR] [--dbpath DIR] (PKG...|-a)\n"
	"                                 rpm -V, with stamped files checked as packaged\n"
	"\n"
	"Common options: -q quiet, -v verbose, -h help, --version.\n"
	"Exit status: 0 done, 1 error (files left untouched), 2 usage,\n"
	"3 some files skipped (hard links, locked, signed, immutable, read-only).\n"
	"See pbitmap(1).\n";

struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct verb verbs[] = {
	{ "add", pb_cmd_add },
	{ "strip", pb_cmd_strip },
	{ "undo", pb_cmd_undo },
	{ "digest", pb_cmd_digest },
	{ "show", pb_cmd_show },
	{ "verify", pb_cmd_verify },
	{ "set", pb_cmd_set },
	{ "clear", pb_cmd_clear },
	{ "merge", pb_cmd_merge },
	{ "record", pb_cmd_record },
	{ "prefetch", pb_cmd_prefetch },
	{ "run", pb_cmd_run },
	{ "stamp", pb_cmd_stamp },
	{ "rpm-verify", pb_cmd_rpm_verify },
};

static const struct verb *find_verb(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(name, verbs[i].name))
			return &verbs[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;
	const struct verb *verb;

	if (!name)
		return pb_usage_error("no VERB given");
	if (!strcmp(name, "help") && argc > 2 && !find_verb(argv[2]))
		return pb_usage_error("help: unknown verb '%s'", argv[2]);
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
		fputs(usage_text, stdout);
		return PB_EXIT_OK;
	}
	if (!strcmp(name, "--version")) {
		printf("pbitmap %s (format version %d)\n", PBITMAP_VERSION_STRING,
		       PBITMAP_VERSION);
		return PB_EXIT_OK;
	}
	verb = find_verb(name);
	if (!verb)
		return pb_usage_error("unknown verb '%s'", name);
	/* Only right after the verb: "record -- CMD -h" is CMD's option. */
	if (argc > 2 && (!strcmp(argv[2], "-h") || !strcmp(argv[2], "--help"))) {
		fputs(usage_text, stdout);
		return PB_EXIT_OK;
	}
	optind = 1;
	return verb->run(argc - 1, argv + 1);
}
