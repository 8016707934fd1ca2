// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Readahead of a record's marked ranges: what `pbitmap prefetch`, `run`,
 * pbitmap-run and the LD_AUDIT module (pbitmap-audit.so) all ask the kernel
 * for.  posix_fadvise(POSIX_FADV_WILLNEED) starts asynchronous reads into
 * the page cache and returns; nothing here waits for the I/O.  No messages
 * (the audit module runs inside other programs), and no state but where a
 * device's chunk comes from (pb_willneed_chunk()) and whether ranges
 * already cached are left out (pb_willneed_set_skip_cached()).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "pbitmap.h"

unsigned long long pb_queue_value(unsigned int maj, unsigned int min, const char *name,
				  unsigned long long dflt)
{
	char path[128], buf[32], *end;
	unsigned long long v;
	ssize_t n;
	int fd;

	/*
	 * A partition's queue is its disk's: ../queue from the partition.
	 * No stdio: this is in pbitmap-run's and the audit module's path,
	 * whose own cold start is measured (t-prefetch).
	 */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s", maj, min, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s", maj, min, name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return dflt;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return dflt;
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	return errno || end == buf ? dflt : v;
}

/*
 * Why ranges go to the kernel in chunks: one POSIX_FADV_WILLNEED reads at
 * most max(io_pages, ra_pages) pages from its start, io_pages the device's
 * largest request (max_sectors_kb) and ra_pages the file's readahead window
 * (read_ahead_kb), each in whole pages, and drops the rest without a word
 * (force_page_cache_ra(), mm/readahead.c, since Linux 4.10).  On the test
 * bed's disk (128 and 1280) pbitmapd made 320 of a planned 4 MiB file's
 * 1024 pages resident; on a host with 8192 and 4096, a 32 MiB range read
 * 8 MiB.  A chunk is that reach, rounded down to whole pages as the kernel
 * counts them; chunking costs no request the kernel would not have made.
 * A device sysfs does not name (btrfs's and overlayfs's anonymous devices,
 * a root without /sys, as in a chroot): 2 MiB.  That may be beyond the
 * reach (a chunk then reads its first part only, as one call did), but not
 * the kernel's default window (128 KiB): where the reach is wider, a range
 * cut in windows goes out as more requests (in t-prefetch's chroot, 102
 * against 87 for a cold start).
 */
uint64_t pb_willneed_chunk_of_device(dev_t dev)
{
	unsigned long long ra = 0, io = 0, page = (unsigned long long)sysconf(_SC_PAGESIZE);

	if (major(dev)) {
		ra = pb_queue_value(major(dev), minor(dev), "read_ahead_kb", 0) * 1024 / page;
		io = pb_queue_value(major(dev), minor(dev), "max_sectors_kb", 0) * 1024 / page;
	}
	if (io > ra)
		ra = io;
	return ra ? (uint64_t)(ra * page) : PB_WILLNEED_CHUNK_DEFAULT;
}

/*
 * Whether the kernel's own read-ahead on @dev already goes out in requests
 * as large as the device takes: its window (read_ahead_kb) at least its
 * largest request (max_sectors_kb).  Then a program's faults in a file
 * read it in requests no call of ours makes larger, and a second reader
 * of that file beside them only cuts both into more requests (each read
 * stops at a page the other has added).  Mainline 7.x gives a rotational
 * disk that reports no optimal I/O size a window of twice its largest
 * request (8192 against 4096 KiB on the test bed's virtio disk, and on
 * this build host's, a 6.18 kernel); 6.12 gives 128 KiB whatever the
 * device (its requests there reach 1280).  False where sysfs does not say.
 */
bool pb_window_wide_of_device(dev_t dev)
{
	unsigned long long ra, io;

	if (!major(dev))
		return false;
	ra = pb_queue_value(major(dev), minor(dev), "read_ahead_kb", 0);
	io = pb_queue_value(major(dev), minor(dev), "max_sectors_kb", 0);
	return io && ra >= io;
}

/*
 * pbitmapd's children read other users' files in those users' roots, where
 * /sys is whatever the user put there (a FIFO would hold a child until its
 * alarm): the daemon gives a table of its watched filesystems' chunks,
 * measured in its own root before any child (pb_willneed_use_table()), and
 * no sysfs is read after that.  Everybody else asks sysfs, once per device
 * in a row: a start-up's files mostly share one.
 */
static const dev_t *table_devs;	/* NULL: no table, ask sysfs */
static const uint64_t *table_chunks;
static const bool *table_wide;
static size_t table_len;
static dev_t chunk_last_dev;
static uint64_t chunk_last;

void pb_willneed_use_table(const dev_t *devs, const uint64_t *chunks, const bool *wide,
			   size_t len)
{
	table_devs = devs;
	table_chunks = chunks;
	table_wide = wide;
	table_len = len;
}

bool pb_window_wide(dev_t dev)
{
	if (!table_devs)
		return pb_window_wide_of_device(dev);
	for (size_t i = 0; i < table_len; i++)
		if (table_devs[i] == dev)
			return table_wide[i];
	return false;
}

bool pb_leaves(enum pb_leave rule, dev_t dev)
{
	return rule == PB_LEAVE_ALWAYS || (rule == PB_LEAVE_WIDE && pb_window_wide(dev));
}

uint64_t pb_willneed_chunk(dev_t dev)
{
	if (table_devs) {
		for (size_t i = 0; i < table_len; i++)
			if (table_devs[i] == dev)
				return table_chunks[i];
		return PB_WILLNEED_CHUNK_DEFAULT;
	}
	if (!chunk_last || dev != chunk_last_dev) {
		chunk_last = pb_willneed_chunk_of_device(dev);
		chunk_last_dev = dev;
	}
	return chunk_last;
}

int pb_willneed_range(int fd, uint64_t off, uint64_t len, uint64_t chunk)
{
	if (!chunk)
		chunk = PB_WILLNEED_CHUNK_DEFAULT;
	for (uint64_t end = off + len, n; off < end; off += n) {
		int err;

		n = end - off < chunk ? end - off : chunk;
		err = posix_fadvise(fd, (off_t)off, (off_t)n, POSIX_FADV_WILLNEED);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Why a marked range wholly cached is left out before ranges are joined:
 * a joined range is read whole, its gaps included, and where its marked
 * pages are cached (a library other programs keep mapped, a second
 * instance of a running program) the gaps would be read alone, for pages
 * nobody reads.  The kernel does the same (pbitmap_uncached(), its patch
 * 0027: a second gdb after memory pressure read 21.5 MiB where 11.4 were
 * needed).  The page cache is asked with cachestat(2) (Linux 6.5), once
 * about the file's marked part and, only if some but not all of it is
 * cached, once per range: after a drop of the caches nothing is, and no
 * range is asked about.  Recent kernels (Debian's 6.12, mainline's 6.18)
 * answer only the file's owner, a writer and
 * CAP_FOWNER, as mincore(2): the page cache of others' files is a side
 * channel.  pbitmapd's readers take the exec'ing user without
 * capabilities: the rule acts for root's execs of root's programs and a
 * user's of their own, and for no data file or script (their records are
 * read as nobody).  Only the kernel can do it for everyone.  Where
 * cachestat is missing (Linux 6.1) or refused, every range is read, as
 * before.
 *
 * Off until a caller turns it on (pb_willneed_set_skip_cached()): pbitmapd
 * (PBITMAP_DAEMON_SKIP_CACHED), `pbitmap prefetch` and `run`.  Not the
 * LD_AUDIT module, which runs in the program at each object's open: there
 * every question is one more system call on the start-up it serves.
 */
static bool skip_cached;

void pb_willneed_set_skip_cached(bool on)
{
	skip_cached = on;
}

#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
struct pb_cachestat_range {
	uint64_t off, len;
};
struct pb_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

static bool cachestat_pages(int fd, uint64_t off, uint64_t len, uint64_t *cached)
{
	struct pb_cachestat_range range = { off, len };
	struct pb_cachestat cs;

	if (syscall(SYS_cachestat, (unsigned int)fd, &range, &cs, 0U))
		return false;
	*cached = cs.nr_cache;
	return true;
}

/* [@off, @end) of @c's file in whole pages: its first page and how many */
static uint64_t cached_pages(const struct pb_cached *c, uint64_t off, uint64_t end,
			     uint64_t *first)
{
	*first = off / c->page;
	return (end + c->page - 1) / c->page - *first;
}

void pb_cached_probe(int fd, uint64_t off, uint64_t end, struct pb_cached *c)
{
	uint64_t cached = 0, first, pages;

	c->fd = fd;
	c->page = (uint64_t)sysconf(_SC_PAGESIZE);
	c->any = c->all = false;
	c->left = 0;
	if (!skip_cached || end <= off)
		return;
	pages = cached_pages(c, off, end, &first);
	if (!cachestat_pages(fd, first * c->page, pages * c->page, &cached))
		return;
	c->any = cached;
	c->all = cached >= pages;
}

bool pb_cached_whole(struct pb_cached *c, uint64_t off, uint64_t end)
{
	uint64_t cached, first, pages;
	bool whole;

	if (!c->any || end <= off)
		return false;
	pages = cached_pages(c, off, end, &first);
	whole = c->all || (cachestat_pages(c->fd, first * c->page, pages * c->page, &cached) &&
			   cached >= pages);
	if (whole)
		c->left += end - off;
	return whole;
}

bool pb_join_add(struct pb_join *j, uint64_t off, uint64_t end, struct pb_extent *closed)
{
	bool open = j->end > j->off;

	if (open && pb_joins(j->end, off, j->gap)) {
		j->end = end;
		return false;
	}
	*closed = (struct pb_extent){ j->off, j->end };
	*j = (struct pb_join){ .gap = j->gap, .off = off, .end = end };
	return open;
}

bool pb_join_end(struct pb_join *j, struct pb_extent *closed)
{
	*closed = (struct pb_extent){ j->off, j->end };
	*j = (struct pb_join){ .gap = j->gap };
	return closed->end > closed->off;
}

/* Ask for @r unless it passes @limit: false to stop there. */
static bool willneed_extent(int fd, struct pb_extent r, uint64_t chunk, uint64_t limit,
			    uint64_t *n_ext, uint64_t *n_bytes, int *err)
{
	if (limit && *n_bytes + (r.end - r.off) > limit)
		return false;	/* the budget: the file's first ranges, which start-up needs first */
	*err = pb_willneed_range(fd, r.off, r.end - r.off, chunk);
	if (*err)
		return false;
	(*n_ext)++;
	*n_bytes += r.end - r.off;
	return true;
}

int pb_willneed(int fd, const struct pb_record *r, uint64_t content, uint64_t gap,
		uint64_t limit, uint64_t *extents, uint64_t *bytes, uint64_t *cached_bytes)
{
	uint64_t nr = pb_nr_pages(r), first, count, n_ext = 0, n_bytes = 0;
	unsigned int shift = pb_page_shift(r);
	struct pb_cached cached = { .fd = -1 };	/* nothing marked: not asked */
	struct pb_join join = { .gap = gap };
	struct pb_extent ready;
	unsigned char *plane;
	bool going = true;
	struct stat st;
	uint64_t chunk;
	int err = 0;

	if (fstat(fd, &st))
		return errno;
	chunk = pb_willneed_chunk(st.st_dev);
	plane = malloc(le32toh(pb_hdr(r)->plane_size));
	if (!plane)
		return ENOMEM;
	pb_effective(r, plane);
	/* one question from the first marked page on: every page cached, nothing read */
	if (pb_next_run(plane, nr, 0, &first, &count))
		pb_cached_probe(fd, first << shift, content, &cached);
	for (uint64_t n = 0; going && pb_next_run(plane, nr, n, &first, &count); n = first + count) {
		uint64_t off = first << shift, end = (first + count) << shift;

		if (end > content)
			end = content;	/* the last granule may be partial */
		if (off >= end)
			break;
		if (!pb_cached_whole(&cached, off, end) && pb_join_add(&join, off, end, &ready))
			going = willneed_extent(fd, ready, chunk, limit, &n_ext, &n_bytes, &err);
	}
	if (going && pb_join_end(&join, &ready))
		willneed_extent(fd, ready, chunk, limit, &n_ext, &n_bytes, &err);
	free(plane);
	if (extents)
		*extents = n_ext;
	if (bytes)
		*bytes = n_bytes;
	if (cached_bytes)
		*cached_bytes = cached.left;
	return err;
}
