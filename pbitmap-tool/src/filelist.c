// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap: the walk over a verb's files, given as arguments or as lines on
 * stdin (--stdin, rpm's file triggers), each file handled once, stopping
 * cleanly on SIGTERM, SIGINT or SIGHUP; and the exit code of the walk.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "pbitmap.h"
#include "cli.h"

void pb_tally_add(struct pb_tally *t, int ret)
{
	if (ret == PB_FAIL)
		t->failed++;
	else if (ret == PB_SKIPPED)
		t->skipped++;
}

int pb_tally_exit(const struct pb_tally *t)
{
	if (t->failed)
		return PB_EXIT_FAIL;
	return t->skipped ? PB_EXIT_SKIPPED : PB_EXIT_OK;
}

/*
 * Identities (device, inode) already handled in --stdin mode.  A hash set
 * with open addressing: a file trigger may list every file of a system.
 */
struct file_id {
	dev_t dev;
	ino_t ino;		/* 0: free slot */
};

struct file_set {
	struct file_id *slot;
	size_t n, cap;		/* cap: 0 or a power of two */
};

static bool file_set_add(struct file_set *s, dev_t dev, ino_t ino);

static int file_set_grow(struct file_set *s)
{
	size_t old_cap = s->cap, cap = old_cap ? old_cap * 2 : 1024;
	struct file_id *old = s->slot, *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -1;
	s->slot = slot;
	s->cap = cap;
	s->n = 0;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].ino)
			file_set_add(s, old[i].dev, old[i].ino);
	free(old);
	return 0;
}

/* False if (dev, ino) was there already. */
static bool file_set_add(struct file_set *s, dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)dev;
	size_t i;

	if (!ino || (2 * (s->n + 1) > s->cap && file_set_grow(s)))
		return true;	/* rather handle a file twice than lose it */
	for (i = (size_t)(h ^ (h >> 31)) & (s->cap - 1); s->slot[i].ino;
	     i = (i + 1) & (s->cap - 1))
		if (s->slot[i].dev == dev && s->slot[i].ino == ino)
			return false;
	s->slot[i] = (struct file_id){ dev, ino };
	s->n++;
	return true;
}

static bool file_set_insert(struct file_set *s, const char *path)
{
	struct stat st;

	if (pb_path_lstat(path, &st))
		return true;	/* let pb_open() report it */
	return file_set_add(s, st.st_dev, st.st_ino);
}

/*
 * SIGTERM (as from timeout(1)), SIGINT, SIGHUP: stop after the current
 * file, whether the files come from the command line or from stdin, so
 * that no file is left half-handled and the exit status says the list
 * was cut short.
 */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void catch_stop_signals(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	/* No SA_RESTART: a getline() waiting on stdin returns at once. */
	struct sigaction sa = { .sa_handler = on_stop_signal }, old;

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		/* A signal ignored by whoever started us (nohup) stays ignored. */
		if (!sigaction(sigs[i], NULL, &old) && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	}
}

/* After a walk: a stop by signal is an error, the rest of the list undone. */
static void report_stop(struct pb_tally *t)
{
	if (stop_signal)
		pb_tally_add(t, pb_error(NULL, "stopped by signal %d (%s): the rest of the list "
					 "was not handled", (int)stop_signal,
					 strsignal(stop_signal)));
}

static bool has_prefix(const char *path, char *const *prefixes)
{
	if (!prefixes)
		return true;
	for (; *prefixes; prefixes++)
		if (!strncmp(path, *prefixes, strlen(*prefixes)))
			return true;
	return false;
}

/* @path below @root, in a buffer kept in *@buf; NULL when out of memory. */
static const char *under_root(const char *root, const char *path, char **buf, size_t *cap)
{
	size_t need = strlen(root) + strlen(path) + 1;

	if (need > *cap) {
		char *p = realloc(*buf, need);

		if (!p)
			return NULL;
		*buf = p;
		*cap = need;
	}
	snprintf(*buf, *cap, "%s%s", root, path);
	return *buf;
}

/*
 * Run @op on each line of @src that names a new file.  The running pbitmap
 * executable is passed over: it cannot be written while it runs.
 */
int pb_for_each_line(const struct pb_line_source *src, unsigned int flags,
			 pb_file_op op, void *arg)
{
	struct pb_tally t = { 0 };
	struct file_set seen = { 0 };
	struct stat self;
	char *line = NULL, *full = NULL;
	size_t cap = 0, full_cap = 0;
	ssize_t len;

	catch_stop_signals();
	/* AT_EXECFN too: a chroot, as rpm's scriptlets run in, may lack /proc. */
	if (!stat("/proc/self/exe", &self))
		file_set_add(&seen, self.st_dev, self.st_ino);
	if (getauxval(AT_EXECFN) && !stat((const char *)getauxval(AT_EXECFN), &self))
		file_set_add(&seen, self.st_dev, self.st_ino);
	while (!stop_signal && (len = getline(&line, &cap, src->in)) > 0) {
		const char *path = line;

		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (len && src->prefixes && *line != '/') {	/* from rpm: "package X is not installed" */
			pb_tally_add(&t, pb_error(NULL, "rpm: %s", line));
			continue;
		}
		if (!len || !has_prefix(line, src->prefixes))
			continue;
		if (src->root && !(path = under_root(src->root, line, &full, &full_cap))) {
			pb_tally_add(&t, pb_error_errno(line, "malloc"));
			break;
		}
		if (!file_set_insert(&seen, path))
			continue;
		pb_tally_add(&t, op(path, flags | PB_OPEN_QUIET | PB_OPEN_ELF_ONLY, arg));
		/* A changed ELF file is a new inode: a later line naming it is a duplicate too. */
		file_set_insert(&seen, path);
	}
	report_stop(&t);
	if (!stop_signal && ferror(src->in))
		pb_tally_add(&t, pb_error_errno(NULL, "reading the list of files"));
	free(line);
	free(full);
	free(seen.slot);
	return pb_tally_exit(&t);
}

/* Run @op on each FILE argument, or on each line of stdin with --stdin. */
int pb_for_each_file(int argc, char **argv, bool from_stdin, unsigned int flags,
			 pb_file_op op, void *arg)
{
	struct pb_line_source src = { .in = stdin };
	struct pb_tally t = { 0 };

	if (!from_stdin) {
		if (optind >= argc)
			return pb_usage_error("%s: no FILE given", argv[0]);
		catch_stop_signals();
		for (int i = optind; i < argc && !stop_signal; i++)
			pb_tally_add(&t, op(argv[i], flags, arg));
		report_stop(&t);
		return pb_tally_exit(&t);
	}
	if (optind < argc)
		return pb_usage_error("%s: --stdin takes no FILE arguments", argv[0]);
	return pb_for_each_line(&src, flags, op, arg);
}
