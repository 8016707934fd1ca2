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
 *     bdev_getblk(): a look-up the dentry and inode caches did not answer,
 *     whether the block was cached or not, so the daemon's own reading of
 *     the list hides no need), on the block device that holds the
 *     program, at most META_MAX_PAGES.
 *   - Only root's programs have lists: a user's run cannot make root
 *     keep a file for it, nor make another user's exec read for it.  (A
 *     program stamped --learn=every, learned from every user's runs with
 *     PBITMAP_DAEMON_LEARN=every, takes the blocks any run looks up, as
 *     its bitmap takes the pages: the package opted in.)
 *   - Merged, not replaced: a run finds most of its look-ups answered by
 *     the dentry cache when the program ran lately, and says nothing then
 *     of the blocks it did not look up.  Each page carries the number of
 *     learned runs since one looked it up; a run that looked up at least
 *     a quarter as many pages as the list holds ages the others, and a
 *     page stays META_KEEP_RUNS such runs without a look-up, then drops
 *     out.  A list not learned for META_KEEP_DAYS is removed at the
 *     daemon's start.
 *   - Kept in the daemon's state directory (root's, mode 0700), one file
 *     per program named by its device and inode, with the filesystem's ID
 *     and the program's size and modification time (an inode number
 *     reused by another file does not take its list); never in a file a
 *     user can write: a list names blocks of a device, which no user may
 *     read and none may choose.
 *   - Read by the exec's reader child, as root, before it takes the
 *     task's identity: checked whole, then its runs joined across the
 *     device's gap, at most META_MAX_BYTES and the exec's budget, with
 *     POSIX_FADV_WILLNEED on the block device.  A list whose header is not
 *     the program's (the filesystem made anew, the program changed) is
 *     not read.  What is read goes to the block device's page cache; no
 *     user sees its content.
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
#include "blockdev.h"

#define META_MAGIC	"pbitmapd-metadata 1"
#define META_MAX_RUNS	META_MAX_PAGES	/* lines of a list */
#define META_KEEP_RUNS	3		/* learned runs a page stays without a look-up */
#define META_MAX_BYTES	(32ull << 20)	/* read for one exec, joined */
#define META_PAGE	4096ull		/* the unit of a list's page numbers */
/*
 * PBITMAP_DAEMON_METADATA=auto reads lists only where the join gap is at
 * least this wide: where a request costs the time of this many bytes or
 * more, the requests a list saves pay.  Where bytes bind (a cloud volume;
 * the benchmark's ebs, whose measured gap is 28-40 KiB) it saves no time
 * and moves metadata ahead of the program's pages: python3 0.105 s slower
 * beside the kernel's plans (p 0.010), 0.175 s alone on Debian's 6.12
 * (docs/bench/2026-12-02-kernel-and-daemon-one-boot.md,
 * 2026-12-01-daemon-metadata-lists.md), where on iops150 and latency
 * (1024 KiB) the lists cut 22-41% of requests and time with them.  The
 * default gap, 256 KiB, reads them.
 */
#define META_READ_MIN_GAP	(256ull << 10)
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

/* What a list is of: its first four lines. */
struct meta_head {
	unsigned int maj, min;		/* the block device */
	unsigned int fsid[2];		/* fstatfs()'s f_fsid */
	uint64_t size;			/* the program's */
	int64_t mtime_s, mtime_ns;
};

/* A line of a list: @nr pages from @start, looked up @age learned runs ago. */
struct meta_run {
	uint64_t start, nr;
	unsigned int age;
};

static void head_of(const struct stat *st, const unsigned int fsid[2], struct meta_head *h)
{
	*h = (struct meta_head){ major(st->st_dev), minor(st->st_dev), { fsid[0], fsid[1] },
				 (uint64_t)st->st_size, st->st_mtim.tv_sec, st->st_mtim.tv_nsec };
}

static bool read_head(FILE *fp, struct meta_head *h)
{
	char line[64];

	return fgets(line, sizeof(line), fp) && !strcmp(line, META_MAGIC "\n") &&
	       fscanf(fp, "device %u:%u\nfsid %x %x\nprogram %" SCNu64 " %" SCNd64 " %" SCNd64,
		      &h->maj, &h->min, &h->fsid[0], &h->fsid[1], &h->size, &h->mtime_s,
		      &h->mtime_ns) == 7 && fgetc(fp) == '\n';
}

static bool same_head(const struct meta_head *a, const struct meta_head *b)
{
	return a->maj == b->maj && a->min == b->min && a->fsid[0] == b->fsid[0] &&
	       a->fsid[1] == b->fsid[1] && a->size == b->size && a->mtime_s == b->mtime_s &&
	       a->mtime_ns == b->mtime_ns;
}

/*
 * The lines of a list past its head, into @r: their number, or -1 when they
 * are not as meta_save() writes them (runs ascending, not overlapping, within
 * 2^40 pages, ages at most META_KEEP_RUNS, META_MAX_PAGES in all).
 */
static int read_runs(FILE *fp, struct meta_run *r)
{
	uint64_t next = 0, pages = 0;
	char line[128];
	int n = 0, end;

	while (fgets(line, sizeof(line), fp)) {
		end = 0;
		if (n == META_MAX_RUNS ||
		    sscanf(line, "%" SCNu64 " %" SCNu64 " %u%n", &r[n].start, &r[n].nr, &r[n].age,
			   &end) != 3 || strcmp(line + end, "\n") || !r[n].nr ||
		    r[n].start < next || r[n].start > (1ull << 40) || r[n].age > META_KEEP_RUNS ||
		    (pages += r[n].nr) > META_MAX_PAGES)
			return -1;
		next = r[n].start + r[n].nr;
		n++;
	}
	return n;
}

/* The ID of the watched filesystem on @dev, as fstatfs() gives it. */
static bool fsid_of(dev_t dev, unsigned int fsid[2])
{
	for (size_t i = 0; i < pbd.nr_fs; i++)
		if (pbd.fs[i].dev == dev) {
			fsid[0] = (unsigned int)pbd.fs[i].mnt_fsid.val[0];
			fsid[1] = (unsigned int)pbd.fs[i].mnt_fsid.val[1];
			return true;
		}
	return false;
}

/* The pages of a list with their ages, ascending, as merge() makes them. */
struct meta_page {
	uint64_t page;
	unsigned int age;
};

/*
 * @pages (this run's look-ups, age 0) and the list's runs @old (aged by one
 * unless @warm), into @out (2 * META_MAX_PAGES): the oldest left out, past
 * META_KEEP_RUNS or past META_MAX_PAGES.  The number kept.
 */
static size_t merge(const struct pb_pageset *pages, const struct meta_run *old, int nr_old,
		    bool warm, struct meta_page *out)
{
	size_t n = 0, count[META_KEEP_RUNS + 2] = { 0 }, keep = 0, k = 0;
	unsigned int oldest = 0;
	uint64_t p;
	bool have = pb_pageset_next(pages, 0, &p), seen;

	for (int i = 0; i < nr_old; i++) {
		for (; have && p < old[i].start; have = pb_pageset_next(pages, p + 1, &p))
			out[n++] = (struct meta_page){ p, 0 };
		for (uint64_t q = old[i].start; q < old[i].start + old[i].nr; q++) {
			seen = have && p == q;
			out[n++] = (struct meta_page){ q, seen ? 0 : old[i].age + !warm };
			if (seen)
				have = pb_pageset_next(pages, p + 1, &p);
		}
	}
	for (; have; have = pb_pageset_next(pages, p + 1, &p))
		out[n++] = (struct meta_page){ p, 0 };
	for (size_t i = 0; i < n; i++)
		count[out[i].age]++;
	while (oldest <= META_KEEP_RUNS && keep + count[oldest] <= META_MAX_PAGES)
		keep += count[oldest++];
	for (size_t i = 0; i < n; i++)
		if (out[i].age < oldest)
			out[k++] = out[i];
	return k;
}

/*
 * A learning run of the program @exe (its stat at the exec) looked up
 * @pages (@nr of them) of its block device (the filesystem's own number):
 * merged into its list, written whole.  Root's programs only.
 */
void meta_save(const struct stat *exe, const struct pb_pageset *pages, uint64_t nr)
{
	static struct meta_run old[META_MAX_RUNS];
	static struct meta_page out[2 * META_MAX_PAGES];
	struct meta_head head, was;
	char path[PATH_MAX], *buf = NULL;
	unsigned int fsid[2];
	uint64_t old_pages = 0;
	size_t len = 0, n;
	int nr_old = 0;
	FILE *fp;

	if (!pbd.cfg.metadata || exe->st_uid != 0 || !fsid_of(exe->st_dev, fsid) ||
	    !list_path(path, sizeof(path), exe->st_dev, exe->st_ino))
		return;
	head_of(exe, fsid, &head);
	fp = fopen(path, "re");
	if (fp) {	/* another program's, or not one: replaced */
		if (!read_head(fp, &was) || !same_head(&was, &head) || (nr_old = read_runs(fp, old)) < 0)
			nr_old = 0;
		fclose(fp);
	}
	for (int i = 0; i < nr_old; i++)
		old_pages += old[i].nr;
	n = merge(pages, old, nr_old, nr * 4 < old_pages, out);
	if (!n)
		return;
	fp = open_memstream(&buf, &len);
	if (!fp)
		return;
	fprintf(fp, "%s\ndevice %u:%u\nfsid %08x %08x\nprogram %" PRIu64 " %" PRId64 " %" PRId64 "\n",
		META_MAGIC, head.maj, head.min, head.fsid[0], head.fsid[1], head.size,
		head.mtime_s, head.mtime_ns);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && out[j].page == out[j - 1].page + 1 &&
		     out[j].age == out[i].age; j++)
			;
		fprintf(fp, "%" PRIu64 " %zu %u\n", out[i].page, j - i, out[i].age);
	}
	/* not synced: a list lost in a crash is learned again */
	if (!fclose(fp) && !pb_write_small_file(path, buf, len, 0600, 0))
		pbd.n.meta_learned++;
	free(buf);
}

/*
 * The learned write gave the program a new inode (@now), with its size and
 * modification time (the tool's rewrite keeps them): its list follows it.
 */
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

/* Whether lists are read at all (their learning is meta_start()'s and learn.c's). */
bool meta_readable(void)
{
	return pbd.cfg.metadata && (!pbd.cfg.metadata_auto || pbd.cfg.gap >= META_READ_MIN_GAP);
}

/*
 * Whether the program @exe has a list to read: the parent's test, one
 * stat() in the state directory, before it starts a child on a patched
 * kernel only for the list (main.c).  The child checks the list whole.
 */
bool meta_listed(const struct stat *exe)
{
	char path[PATH_MAX];
	struct stat st;

	return meta_readable() && exe->st_uid == 0 &&
	       list_path(path, sizeof(path), exe->st_dev, exe->st_ino) &&
	       !lstat(path, &st) && S_ISREG(st.st_mode);
}

/*
 * The block device @dev, opened for reading (its node as `pbitmap
 * device-gap` finds it); -1 when it cannot be, -2 when what its node
 * names is not that device.
 */
static int open_bdev(dev_t dev)
{
	char node[PATH_MAX];
	struct stat st;
	int fd;

	if (!pb_block_device_node(dev, node, sizeof(node)))
		return -1;
	fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISBLK(st.st_mode) || st.st_rdev != dev)) {
		close(fd);
		fd = -2;
	}
	return fd;
}

static int stale(const char *path, const char *why)
{
	if (pb_verbose)
		pb_note(path, "not read: %s", why);
	return -1;
}

/*
 * The list of the program open as @exe_fd (@st): its runs, joined across
 * @gap bytes, read ahead on its block device, at most @budget bytes (0:
 * no limit but META_MAX_BYTES).  In the exec's reader child, as root.
 * 1: read (*@bytes asked for); 0: no list; -1: a list not read (not this
 * program's, or not one: the next learning run replaces it), checked
 * whole before anything is read.
 */
int meta_read(int exe_fd, const struct stat *st, uint64_t gap, uint64_t budget,
	      uint64_t *bytes)
{
	static struct meta_run r[META_MAX_RUNS];
	struct meta_head head, want;
	uint64_t left = META_MAX_BYTES, from, to, len;
	char path[PATH_MAX];
	unsigned int fsid[2];
	struct statfs sfs;
	int fd, n;
	FILE *fp;

	*bytes = 0;
	if (!meta_readable() || st->st_uid != 0 ||
	    !list_path(path, sizeof(path), st->st_dev, st->st_ino))
		return 0;
	fp = fopen(path, "re");
	if (!fp)
		return 0;
	if (!read_head(fp, &head)) {
		fclose(fp);
		return stale(path, "not a " META_MAGIC " list");
	}
	if (fstatfs(exe_fd, &sfs))
		memset(&sfs, 0, sizeof(sfs));
	fsid[0] = (unsigned int)sfs.f_fsid.__val[0];
	fsid[1] = (unsigned int)sfs.f_fsid.__val[1];
	head_of(st, fsid, &want);
	if (!same_head(&head, &want)) {
		fclose(fp);
		return stale(path, "another program's (its filesystem, size or time)");
	}
	n = read_runs(fp, r);
	fclose(fp);
	if (n < 0)
		return stale(path, "lines not as pbitmapd writes them");
	fd = open_bdev(st->st_dev);
	if (fd < 0)
		return stale(path, fd == -2 ? "its block device is not where sysfs names it" :
			     "its block device cannot be opened");
	if (budget && budget < left)
		left = budget;
	for (int i = 0, j; i < n && left; i = j) {
		from = r[i].start * META_PAGE;
		for (j = i + 1; j < n && r[j].start * META_PAGE <=
		     (r[j - 1].start + r[j - 1].nr) * META_PAGE + gap; j++)
			;
		to = (r[j - 1].start + r[j - 1].nr) * META_PAGE;
		len = to - from < left ? to - from : left;
		if (posix_fadvise(fd, (off_t)from, (off_t)len, POSIX_FADV_WILLNEED))
			break;
		left -= len;
		*bytes += len;
	}
	close(fd);
	if (pb_verbose)
		pb_note(path, "%" PRIu64 " bytes of metadata read ahead", *bytes);
	return 1;
}
