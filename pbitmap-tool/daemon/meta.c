// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmapd's metadata lists: the blocks of file-system metadata a
 * program's start-up looks up, read in one batch at its next exec.
 *
 * Why: a start-up's path look-ups (ld.so opening its libraries, a plan's
 * files, the program's own opens) read directory, inode-table and extent
 * blocks one at a time, each a read request the look-up waits for, and
 * no bitmap or plan lists them: they are the block device's pages, not a
 * file's.  On a disk that serves 150 requests a second they were a third
 * of a plan's requests and 100 ms of python3's start-up; read in one
 * batch before its exec, python3 drew level with reading every file
 * whole and gdb made 2.3x its physical floor of requests instead of 3.3x
 * (docs/bench/2026-12-01-metadata-batch.md, an experiment from a list
 * traced in the same boot).  This is that batch, learned.
 *
 *   - Learned by learn.c: the blocks the learner and the daemon's reader
 *     child serving its exec looked up in the window (learn.bpf.c, at
 *     bdev_getblk(): look-ups, cached or not, so neither a warm cache nor
 *     the daemon's own reading of the list hides a need), on the block
 *     device that holds the program, at most META_MAX_PAGES.  Each
 *     learning run replaces the list: a block no longer looked up drops
 *     out with the next run; a list not learned for META_KEEP_DAYS is
 *     removed at the daemon's start.
 *   - Kept in the daemon's state directory (root's, mode 0700), one file
 *     per program named by its device and inode, with the filesystem's
 *     ID; never in a file a user can write: a list names blocks of a
 *     device, which no user may read and none may choose.
 *   - Read by the exec's reader child, as root, before it takes the
 *     task's identity: the runs joined across the device's gap, at most
 *     META_MAX_BYTES and the exec's budget, with POSIX_FADV_WILLNEED on
 *     the block device.  A list whose filesystem ID or device is not the
 *     program's (the filesystem made anew) is not read.  What is read
 *     goes to the block device's page cache; no user sees its content.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "pbitmapd.h"

#define META_MAGIC	"pbitmapd-metadata 1"
#define META_MAX_RUNS	4096		/* lines of a list read */
#define META_MAX_BYTES	(32ull << 20)	/* read for one exec, joined */
#define META_PAGE	4096ull		/* the unit of a list's page numbers */
/*
 * A list not relearned for so long is removed at the daemon's start: its
 * program was replaced (a package upgrade: a new inode, and its own list
 * once learned) or removed, or is no longer run.
 */
#define META_KEEP_DAYS	30

static char *list_path(char *out, size_t size, dev_t dev, ino_t ino)
{
	if ((size_t)snprintf(out, size, "%s/metadata-%u:%u-%llu", pbd.state_dir, major(dev),
			     minor(dev), (unsigned long long)ino) >= size)
		return NULL;
	return out;
}

static void meta_expire(void)
{
	time_t now = time(NULL);
	DIR *dir = opendir(pbd.state_dir);
	struct dirent *e;
	struct stat st;

	if (!dir)
		return;
	while ((e = readdir(dir)))
		if (!strncmp(e->d_name, "metadata-", 9) &&
		    !fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    now - st.st_mtime > META_KEEP_DAYS * 86400)
			unlinkat(dirfd(dir), e->d_name, 0);
	closedir(dir);
}

/*
 * The state directory: made if missing, its old lists removed; metadata
 * lists off when it cannot be made, or is not root's alone.
 */
int meta_start(void)
{
	struct stat st;

	if (!pbd.cfg.metadata)
		return 0;
	if (mkdir(pbd.state_dir, 0700) && errno != EEXIST) {
		pbd.cfg.metadata = false;
		return pb_error_errno(pbd.state_dir, "cannot create: metadata lists are off");
	}
	if (lstat(pbd.state_dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 077)) {
		pbd.cfg.metadata = false;
		return pb_error(pbd.state_dir, "not a directory of root's alone (mode 0700): "
				"metadata lists are off");
	}
	meta_expire();
	return 0;
}

/* The ID of the watched filesystem on @dev, as fstatfs() gives it. */
static bool fsid_of(dev_t dev, __kernel_fsid_t *fsid)
{
	struct stat st;

	for (size_t i = 0; i < pbd.nr_fs; i++)
		if (!fstat(pbd.fs[i].fd, &st) && st.st_dev == dev) {
			*fsid = pbd.fs[i].fsid;
			return true;
		}
	return false;
}

/*
 * A learning run of the program (@dev, @ino) looked up @pages of its
 * block device (@dev too: a filesystem on a block device has its
 * number): its list, replaced whole.  An empty run removes the list.
 */
void meta_save(dev_t dev, ino_t ino, const struct pb_pageset *pages)
{
	char path[PATH_MAX], *buf = NULL;
	__kernel_fsid_t fsid;
	uint64_t p, start = 0, nr = 0;
	size_t len = 0;
	FILE *fp;

	if (!pbd.cfg.metadata || !list_path(path, sizeof(path), dev, ino))
		return;
	if (!pb_pageset_count(pages) || !fsid_of(dev, &fsid)) {
		unlink(path);
		return;
	}
	fp = open_memstream(&buf, &len);
	if (!fp)
		return;
	fprintf(fp, "%s\ndevice %u:%u\nfsid %08x %08x\n", META_MAGIC, major(dev), minor(dev),
		(unsigned int)fsid.val[0], (unsigned int)fsid.val[1]);
	for (uint64_t from = 0; pb_pageset_next(pages, from, &p); from = p + 1) {
		if (nr && p == start + nr) {
			nr++;
			continue;
		}
		if (nr)
			fprintf(fp, "%" PRIu64 " %" PRIu64 "\n", start, nr);
		start = p;
		nr = 1;
	}
	fprintf(fp, "%" PRIu64 " %" PRIu64 "\n", start, nr);
	/* not synced: a list lost in a crash is learned again */
	if (!fclose(fp) && !pb_write_small_file(path, buf, len, 0600, 0))
		pbd.n.meta_learned++;
	free(buf);
}

/* The learned write gave the program a new inode (@now): its list follows it. */
void meta_moved(dev_t dev, ino_t ino, const struct stat *now)
{
	char from[PATH_MAX], to[PATH_MAX];

	if (!pbd.cfg.metadata || (now->st_dev == dev && now->st_ino == ino) ||
	    !list_path(from, sizeof(from), dev, ino) ||
	    !list_path(to, sizeof(to), now->st_dev, now->st_ino))
		return;
	if (rename(from, to) && errno != ENOENT)
		pb_error_errno(from, "cannot rename to %s", to);
}

/* The block device @dev, opened for reading: udev's name, else sysfs's. */
static int open_bdev(dev_t dev)
{
	char path[PATH_MAX], uevent[4096], *name;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/dev/block/%u:%u", major(dev), minor(dev));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major(dev), minor(dev));
		if (read_text(path, uevent, sizeof(uevent)) < 0)
			return -1;
		name = strstr(uevent, "DEVNAME=");
		if (!name)
			return -1;
		name += strlen("DEVNAME=");
		name[strcspn(name, "\n")] = '\0';
		if (strstr(name, ".."))
			return -1;
		snprintf(path, sizeof(path), "/dev/%s", name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	}
	if (fd >= 0 && (fstat(fd, &st) || !S_ISBLK(st.st_mode) || st.st_rdev != dev)) {
		close(fd);
		fd = -2;
	}
	return fd;
}

struct byte_range {
	uint64_t from, to;
};

static int stale(const char *path, const char *why)
{
	if (pb_verbose)
		pb_note(path, "not read: %s", why);
	return -1;
}

/*
 * The runs of the list @fp (past its header), joined across @gap bytes,
 * as byte ranges in @r (META_MAX_RUNS at most): their number, or -1 when
 * they are not ascending and apart (as meta_save() writes them) or too many.
 */
static int meta_ranges(FILE *fp, uint64_t gap, struct byte_range *r)
{
	uint64_t start, nr, next = 0;
	char line[128];
	int n = 0, runs = 0;

	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%" SCNu64 " %" SCNu64, &start, &nr) != 2 || !nr ||
		    start < next || start > (1ull << 40) || nr > (1ull << 20) ||
		    ++runs > META_MAX_RUNS)
			return -1;
		next = start + nr + 1;
		if (n && start * META_PAGE <= r[n - 1].to + gap) {
			r[n - 1].to = (start + nr) * META_PAGE;
			continue;
		}
		r[n].from = start * META_PAGE;
		r[n++].to = (start + nr) * META_PAGE;
	}
	return n;
}

/*
 * The list of the program open as @exe_fd (@st): its runs, joined across
 * @gap bytes, read ahead on its block device, at most @budget bytes (0:
 * no limit but META_MAX_BYTES).  In the exec's reader child, as root.
 * 1: read (*@bytes asked for); 0: no list; -1: a list not read (not this
 * filesystem's, or not one: it is left for the next learning run to
 * replace), checked whole before anything is read.
 */
int meta_read(int exe_fd, const struct stat *st, uint64_t gap, uint64_t budget,
	      uint64_t *bytes)
{
	static struct byte_range r[META_MAX_RUNS];
	char path[PATH_MAX], line[128];
	unsigned int maj, min, f0, f1;
	uint64_t left = META_MAX_BYTES, len;
	struct statfs sfs;
	int fd, n;
	FILE *fp;

	*bytes = 0;
	if (!pbd.cfg.metadata || !list_path(path, sizeof(path), st->st_dev, st->st_ino))
		return 0;
	fp = fopen(path, "re");
	if (!fp)
		return 0;
	if (!fgets(line, sizeof(line), fp) || strcmp(line, META_MAGIC "\n") ||
	    fscanf(fp, "device %u:%u\nfsid %x %x\n", &maj, &min, &f0, &f1) != 4) {
		fclose(fp);
		return stale(path, "not a " META_MAGIC " list");
	}
	if (makedev(maj, min) != st->st_dev || fstatfs(exe_fd, &sfs) ||
	    (unsigned int)sfs.f_fsid.__val[0] != f0 || (unsigned int)sfs.f_fsid.__val[1] != f1) {
		fclose(fp);
		return stale(path, "another filesystem's (its ID or device)");
	}
	n = meta_ranges(fp, gap, r);
	fclose(fp);
	if (n < 0)
		return stale(path, "runs not ascending and apart, or too many");
	fd = open_bdev(st->st_dev);
	if (fd < 0)
		return stale(path, fd == -2 ? "its block device is not where sysfs names it" :
			     "its block device cannot be opened");
	if (budget && budget < left)
		left = budget;
	for (int i = 0; i < n && left; i++) {
		len = r[i].to - r[i].from < left ? r[i].to - r[i].from : left;
		if (posix_fadvise(fd, (off_t)r[i].from, (off_t)len, POSIX_FADV_WILLNEED))
			break;
		left -= len;
		*bytes += len;
	}
	close(fd);
	if (pb_verbose)
		pb_note(path, "%" PRIu64 " bytes of metadata read ahead", *bytes);
	return 1;
}
