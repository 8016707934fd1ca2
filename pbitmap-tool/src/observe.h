/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Between observing a program (observe.c) and writing what it read
 * (cmd-record.c): the pages each file was seen to have in memory.
 */
#ifndef PBITMAP_OBSERVE_H
#define PBITMAP_OBSERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pbitmap.h"

/*
 * One file that was mapped by the observed program.  The file is the
 * inode (@dev, @ino) /proc/PID/maps named; @path is the name it had there,
 * which may be stale by the time the observation ends.
 */
struct pb_observed_file {
	dev_t dev;
	ino_t ino;
	char *path;
	uint64_t page_size;		/* the unit of @pages, in bytes */
	struct pb_pageset pages;	/* file offset / @page_size of each page seen */
	bool told_too_far;	/* observe.c's: the note on pages past the
				 * largest file a bitmap describes is out */
};

/*
 * Run @cmd (argv, NULL-terminated) under ptrace with everything it starts,
 * and collect the file pages it had in memory.  @window > 0: sample once,
 * @window seconds after the first exec, then let it run untraced.
 * *@files and *@nr_files get what was observed (possibly nothing, even
 * when CMD could not be run); free them with pb_observed_free().
 * Returns the exit code `record` passes on: CMD's status (128 + signal if
 * killed), or PB_EXIT_FAIL if CMD could not be run or followed to its end.
 */
int pb_observe(char **cmd, double window, struct pb_observed_file **files,
	       size_t *nr_files);
void pb_observed_free(struct pb_observed_file *files, size_t nr_files);

#endif
