/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pbitmap: what the command modules share.  One file per verb or group of
 * verbs, each with the same shape: parse the options, then hand each FILE
 * to a per-file function through pb_for_each_file().
 *
 *   main.c       the verb table, --help, --version
 *   messages.c   pb_error() and friends (declared in pbitmap.h), usage errors
 *   args.c       numbers, byte sizes, page and byte ranges
 *   filelist.c   the walk over FILE arguments or --stdin lines; exit codes
 *   cmd-add.c    add, strip (and the rpm path list: pb_stamp_lines)
 *   cmd-undo.c   undo, digest
 *   cmd-show.c   show, verify
 *   cmd-edit.c   set, clear, merge
 *   cmd-profile.c export, import (the format: profile.h)
 *   cmd-record.c record (observing CMD: observe.c, observe.h)
 *   cmd-plan.c   plan (the format: plan.c)
 *   cmd-status.c status (what pbitmapd, pbitmap-tool/daemon/, has done)
 *   cmd-gap.c    device-gap (what a request costs on a device, in bytes)
 *   prefetch.c   prefetch, run;  rpm.c  stamp, rpm-verify
 */
#ifndef PBITMAP_CLI_H
#define PBITMAP_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pbitmap.h"

/* ---- messages (messages.c) --------------------------------------------- */

/* Explain why an opened file has no usable record.  Returns PB_FAIL. */
int pb_error_no_record(const struct pb_file *f);
/* pb_open(), then refuse (pb_error_no_record(), closed) a file without a
 * valid bitmap: what every verb that reads or edits one does first. */
int pb_open_record(struct pb_file *f, const char *path, unsigned int flags);

/*
 * Flush stdout and report a write error on it (a full disk, a closed pipe)
 * as util-linux's close_stdout() does.  Returns PB_EXIT_OK or PB_EXIT_FAIL.
 */
int pb_flush_stdout(void);

/* ---- options (args.c) -------------------------------------------------- */

/*
 * getopt_long() for a verb (argv[0]), which also takes the options every
 * verb takes: -q/--quiet and -v/--verbose (handled here), -h/--help.
 * @shortopts and @longopts are the verb's own; a leading '+' in @shortopts
 * stops at the first operand (record and run: CMD's options are CMD's).
 * Returns the next option of the verb's own, -1 at the end, or one of:
 */
#define PB_OPT_HELP	0x10000	/* the verb's help is printed on stdout */
#define PB_OPT_ERROR	0x10001	/* a usage error, reported */
int pb_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
/* The exit status for PB_OPT_HELP (0, or 1 on a write error) or PB_OPT_ERROR (2). */
int pb_option_exit(int c);
/* The usage of verb @name on stdout (main.c). */
void pb_print_verb_help(const char *name);

/* A decimal number from 0 to @max, nothing after it. */
bool pb_parse_uint(const char *s, unsigned long long max, unsigned long long *out);
/*
 * A byte count with an optional K, M, G or T suffix (powers of 1024);
 * *@rest points after it.
 */
bool pb_parse_size(const char *s, const char **rest, uint64_t *out);

/* Decimal seconds, with an optional fraction: "2", "0.5". */
bool pb_parse_seconds(const char *s, double *out);

struct pb_range {
	uint64_t first, last;		/* inclusive; in bytes or pages */
	bool bytes;
};

struct pb_ranges {
	struct pb_range *v;		/* malloc'ed */
	size_t n;
};

/*
 * Append the items of a --pages list ("N", "N-M", "N+COUNT") or, with
 * @bytes, of a --ranges list ("START-END" with END exclusive, "START+LEN",
 * K/M/G/T suffixes) to @r.  False when the list is malformed or empty.
 */
bool pb_parse_ranges(struct pb_ranges *r, const char *list, bool bytes);

/* ---- the file walk and the exit code (filelist.c) ---------------------- */

/* Combine per-file results into the exit code. */
struct pb_tally {
	int failed;
	int skipped;
};

/* Count @ret (0, PB_FAIL, PB_SKIPPED, PB_NONE). */
void pb_tally_add(struct pb_tally *t, int ret);
/* PB_EXIT_FAIL if anything failed, else PB_EXIT_SKIPPED or PB_EXIT_OK. */
int pb_tally_exit(const struct pb_tally *t);

/* Handles one file; returns 0, PB_FAIL, PB_SKIPPED or PB_NONE. */
typedef int (*pb_file_op)(const char *path, unsigned int flags, void *arg);

/* Where the paths of a list come from, and which of them are taken. */
struct pb_line_source {
	FILE *in;
	const char *root;		/* prepended to every path, or NULL */
	char *const *prefixes;		/* NULL: every path */
};

/*
 * Run @op on each line of @src that names a file not seen yet, with
 * PB_OPEN_QUIET | PB_OPEN_ELF_ONLY added to @flags.  Stops after the
 * current file on SIGTERM, SIGINT or SIGHUP.  Returns an exit code.
 */
int pb_for_each_line(const struct pb_line_source *src, unsigned int flags,
		     pb_file_op op, void *arg);
/* Run @op on argv[optind..], or on the lines of stdin with @from_stdin. */
int pb_for_each_file(int argc, char **argv, bool from_stdin, unsigned int flags,
		     pb_file_op op, void *arg);

/* ---- the verbs (cmd-*.c); argv[0] is the verb -------------------------- */

int pb_cmd_add(int argc, char **argv);
int pb_cmd_strip(int argc, char **argv);
int pb_cmd_undo(int argc, char **argv);
int pb_cmd_digest(int argc, char **argv);
int pb_cmd_show(int argc, char **argv);
int pb_cmd_verify(int argc, char **argv);
int pb_cmd_plan(int argc, char **argv);
int pb_cmd_set(int argc, char **argv);
int pb_cmd_clear(int argc, char **argv);
int pb_cmd_merge(int argc, char **argv);
int pb_cmd_export(int argc, char **argv);
int pb_cmd_import(int argc, char **argv);

#endif /* PBITMAP_CLI_H */
