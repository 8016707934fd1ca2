// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `pbitmap record [--window SECONDS] CMD [ARG...]`: run CMD under
 * observation (observe.c: which pages of which files it read), then make
 * what was observed the newest generation of each of those files that
 * carries a bitmap, through the same open/lock/save path as every verb
 * that writes (pbfile.c).  The exit code is CMD's.
 */
#include <endian.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "pbitmap.h"
#include "cli.h"
#include "observe.h"

/* ---- command line ------------------------------------------------------ */

/* Returns -1 to go on, else the exit status (after --help, 0). */
static int parse_args(int argc, char **argv, double *window)
{
	static const struct option opts[] = {
		{ "window", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* '+': CMD's own options are not ours, even without "--". */
	while ((c = pb_getopt(argc, argv, "+", opts)) != -1) {
		switch (c) {
		case 'w':
			if (!pb_parse_seconds(optarg, window) ||
			    *window <= 0 || *window > 1e6)
				return pb_usage_error("record: --window wants seconds > 0, not '%s'",
						      optarg);
			break;
		default:
			return pb_option_exit(c);
		}
	}
	if (optind >= argc)
		return pb_usage_error("record: no CMD given");
	return -1;
}

/* ---- saving what was learned ---------------------------------------------- */

/*
 * The name in /proc/PID/maps may be stale: the file can have been deleted
 * (" (deleted)" appended) or replaced by now.  Only the same inode counts.
 * btrfs subvolumes report a different st_dev than maps does, so a matching
 * inode number at the same path is accepted whatever the device says.
 */
static bool still_there(const struct pb_observed_file *sf, struct stat *st)
{
	return stat(sf->path, st) == 0 && S_ISREG(st->st_mode) && st->st_ino == sf->ino;
}

static void learn_into(struct pb_file *f, const struct pb_observed_file *sf)
{
	uint64_t marked;

	if (pb_learn_generation(f, &sf->pages, sf->page_size, &marked) == 0)
		pb_note(f->path, "generation %" PRIu64 ": %" PRIu64 " of %" PRIu64 " pages",
			le64toh(pb_hdr(&f->rec)->runs), marked, pb_nr_pages(&f->rec));
}

/*
 * A read-only look first: most mapped files (libc, locales) carry no
 * bitmap, and opening them for writing would trip over policy checks
 * (read-only filesystem, IMA) that do not concern them.
 */
static void save_file(const struct pb_observed_file *sf)
{
	struct pb_file f;
	struct stat st;
	bool has_record, no_learn;

	if (!still_there(sf, &st)) {
		if (pb_verbose)
			pb_note(sf->path, "deleted or replaced since it was mapped; not learned");
		return;
	}
	if (pb_open(&f, sf->path, PB_OPEN_PROBE))
		return;
	has_record = f.has_record;
	no_learn = has_record && (le32toh(pb_hdr(&f.rec)->flags) & PBITMAP_F_NO_LEARN);
	pb_close(&f);
	if (!has_record) {
		if (pb_verbose)
			pb_note(sf->path, "no bitmap; not learned");
		return;
	}
	if (no_learn) {
		pb_note(sf->path, "learning is off for this bitmap (pbitmap add --learn "
			"turns it on); not learned");
		return;
	}
	if (pb_open(&f, sf->path, PB_OPEN_WRITE))
		return;		/* reported: busy (ETXTBSY), read-only, ... */
	if (f.st.st_ino != st.st_ino || f.st.st_dev != st.st_dev)
		pb_error(sf->path, "replaced while being learned; not learned");
	else if (f.has_record)
		learn_into(&f, sf);
	pb_close(&f);
}
int pb_cmd_record(int argc, char **argv)
{
	struct pb_observed_file *files;
	size_t nr_files;
	double window = 0;
	int ret;

	ret = parse_args(argc, argv, &window);
	if (ret >= 0)
		return ret;
	ret = pb_observe(argv + optind, window, &files, &nr_files);
	for (size_t i = 0; i < nr_files; i++)
		save_file(&files[i]);
	pb_observed_free(files, nr_files);
	return ret;
}
