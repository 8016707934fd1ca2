// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * meta-willneed: read a cold start's file-system metadata in one batch,
 * then run it (bench-job.sh, condition plan-probed-meta: an experiment).
 *
 *   meta-willneed DEVICE LIST COMMAND [ARG...]
 *
 * LIST holds lines "OFFSET LENGTH", bytes of DEVICE: the blocks an earlier
 * cold start of COMMAND read through the block device's page cache
 * (directories, inode tables; bench-job.sh's meta_list()), already joined
 * across the gap the disk is worth.  Each is asked for with
 * POSIX_FADV_WILLNEED, which starts reading it into that page cache and
 * does not wait; ext4 then finds every block there when COMMAND's exec,
 * its start-up plan's look-ups and its own opens walk the paths.  COMMAND
 * is exec'd at once, so that its time includes the reads.
 *
 * What it estimates: how much of a start-up's time and read requests are
 * the one-block-at-a-time metadata reads of path look-ups, which a plan
 * that names files by path does not batch.  Exit status: COMMAND's, or 2
 * on usage or an unreadable LIST, 127 if COMMAND cannot be run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long long off, len;
	FILE *list;
	int fd, err;

	if (argc < 4) {
		fprintf(stderr, "usage: meta-willneed DEVICE LIST COMMAND [ARG...]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "meta-willneed: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	list = fopen(argv[2], "re");
	if (!list) {
		fprintf(stderr, "meta-willneed: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	while (fscanf(list, "%llu %llu", &off, &len) == 2) {
		err = posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
		if (err) {
			fprintf(stderr, "meta-willneed: %s: WILLNEED %llu+%llu: %s\n",
				argv[1], off, len, strerror(err));
			return 2;
		}
	}
	if (!feof(list)) {
		fprintf(stderr, "meta-willneed: %s: not lines of OFFSET LENGTH\n", argv[2]);
		return 2;
	}
	fclose(list);
	close(fd);
	execvp(argv[3], argv + 3);
	fprintf(stderr, "meta-willneed: %s: %s\n", argv[3], strerror(errno));
	return 127;
}
