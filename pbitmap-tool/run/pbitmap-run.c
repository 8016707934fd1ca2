// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap-run: `pbitmap run` as a launcher of its own.
 *
 * A launcher's start-up is on the critical path of the program it starts:
 * every page of its own code and libraries it faults in from a cold disk
 * is a read request the program itself would not have made.  This binary
 * is linked statically, from the same run code (prefetch.c) and only the
 * modules that reading a bitmap needs, so that starting it reads one file,
 * and few pages of it.  `pbitmap` is static too (no ld.so, no shared
 * library; t-prefetch measures `pbitmap run` against this launcher), and
 * holds every verb.
 */
#include <stdio.h>
#include <string.h>

#include "pbitmap.h"
#include "cli.h"

static const char usage[] =
	"Usage: pbitmap-run [-v|-q] [--] CMD [ARG...]\n"
	"Prefetch the marked pages of CMD, its interpreter, the libraries it\n"
	"loads (found as ld.so finds them) and the files its arguments name,\n"
	"then execute CMD.  Same as `pbitmap run`, with a smaller start-up.\n"
	"See pbitmap(1).\n";

/* --help and -h, as pb_getopt() finds them among run's options. */
void pb_print_verb_help(const char *name)
{
	(void)name;
	fputs(usage, stdout);
}

int main(int argc, char **argv)
{
	pb_progname = "pbitmap-run";
	if (argc == 2 && !strcmp(argv[1], "--help")) {
		fputs(usage, stdout);
		return PB_EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("pbitmap-run %s (format version %d)\n", PBITMAP_VERSION_STRING,
		       PBITMAP_VERSION_PLAN);
		return PB_EXIT_OK;
	}
	return pb_cmd_run(argc, argv);
}
