// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmapd's learning on a stock kernel: the pages a starting program
 * faults in its first PBITMAP_DAEMON_LEARN_WINDOW_MS become a generation
 * of the bitmaps of the stamped files it mapped, as the patched kernel's
 * learning makes one (docs/FORMAT.md, "Learning").
 *
 * learn.bpf.c sees the execs and the faults (why there: it says); this
 * side keeps, per learner, the files it faulted on and their pages, and
 * when the learner exits or its window ends, hands them to a child that
 * writes them.
 *
 *   - Which programs: one whose record admits learning, told to the BPF
 *     side (the learnable map) when its exec's read-ahead child has read
 *     its record.  So a program is learned from its second exec after the
 *     daemon starts.  At most one learning run per program per
 *     PBITMAP_DAEMON_LEARN_INTERVAL_S: other runs are not followed.
 *   - Names: a file's name is taken from /proc/PID/maps at the learner's
 *     first fault on it, relative to the learner's root, and the write
 *     opens that name in that root and checks it leads to the inode that
 *     faulted; a file renamed or replaced since is not written.
 *   - Whose write (the kernel's rule): a file the learner owns, as the
 *     learner (its real user and groups, no capability); a file stamped
 *     --learn=every, with PBITMAP_DAEMON_LEARN=every, that is not set-id
 *     and has no file capabilities, as root; no other.  Every write goes
 *     through the tool's open, lock and save (pb_open(PB_OPEN_WRITE),
 *     pb_learn_generation()), which refuse what the tool refuses (a file
 *     the writer may not write, IMA, fs-verity, immutable) and never wait
 *     on a lock: PBITMAP_LOCK_TIMEOUT is 0 in the writer.  The security
 *     modules see pbitmapd's writer child, not the learner.
 *   - An ELF file's generation goes where the kernel writes it, into
 *     the record slot that is not current, in place (pb_save_learned(),
 *     elfstore.c): the file keeps its inode, so the start-up plans that
 *     name a library stay valid.  Where that is not safe from user space
 *     it is written as the tool writes every other change, a copy
 *     renamed over it, and gets a new inode: the program itself (a
 *     write-open would make a concurrent exec of it fail; plans, the
 *     tool's and the daemon's, do not list it), a file being executed
 *     (ETXTBSY), one with set-ID bits or file capabilities (a write
 *     removes them), or without its marker.  learn_in_place counts the
 *     files kept (pbitmapd(8)).
 *   - Plans: a program with a plan area gets, in the same write as its
 *     generation, a start-up plan of the files the run faulted on, in
 *     first-fault order (learn_plan(); PBITMAP_DAEMON_LEARN_PLANS).  The
 *     tool's plan writer builds it (planfiles.c), as for `pbitmap plan`.
 *   - Metadata: the blocks of the program's block device its start-up
 *     looked up (its path look-ups' directories and inodes), kept by
 *     meta.c, which reads them in one batch at its next exec.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "pbitmapd.h"
#include "learn.h"

/* The compiled BPF object (Makefile: PBD_LEARN_OBJ), in this binary. */
__asm__(".pushsection .rodata\n"
	".balign 8\n"
	".global pbd_learn_obj\n"
	"pbd_learn_obj:\n"
	".incbin \"" PBD_LEARN_OBJ "\"\n"
	".global pbd_learn_obj_end\n"
	"pbd_learn_obj_end:\n"
	".popsection\n");
extern const char pbd_learn_obj[], pbd_learn_obj_end[];

#define MAX_LEARNERS	64	/* runs followed at once */
#define MAX_PER_USER	8	/* of which one user's */
/*
 * Files of one run: emacs -batch faults on 114 files at its start, 74 of
 * them native-lisp .eln files; at 64, 51 of them went unlearned
 * (docs/bench/2026-11-30-pbitmapd-precise-hold.md).
 */
#define MAX_FILES	256
#define MAX_GROUPS	64	/* a learner with more groups is not followed */
#define MAX_PROGRAMS	1024	/* programs whose last learning run is remembered */
#define PAGE_SIZE_LEARN	4096	/* the unit of the BPF side's page indices */
/*
 * Memory: a file's pages are kept in chunks of PB_CHUNK_PAGES (520 bytes
 * each); at most FILE_CHUNKS per file (4 GiB of it: insertion stays cheap)
 * and ALL_CHUNKS in all (8 MiB).  Events past either are dropped.
 */
#define FILE_CHUNKS	256
#define ALL_CHUNKS	16384
/*
 * One run's share: a user's MAX_PER_USER runs hold half the pool at most,
 * so that one user's sparse faults leave room for others' runs (emacs's
 * start-up, 114 files, takes about 120 chunks).
 */
#define RUN_CHUNKS	(ALL_CHUNKS / (2 * MAX_PER_USER))
#define MAPS_LINES	(1u << 18)	/* of a run's /proc/PID/maps read, in all */
/*
 * Metadata pages of one run: META_MAX_PAGES (pbitmapd.h) in at most
 * META_MAX_CHUNKS chunks (128 KiB: scattered pages do not take a user's
 * share of ALL_CHUNKS); more are dropped.
 */
#define META_MAX_CHUNKS	256
/* Events handled per turn of the event loop: a flood starves nothing else. */
#define EVENTS_PER_TURN	4096

struct learn_file {
	dev_t dev;
	ino_t ino;
	char *path;		/* in the learner's root; NULL: not named */
	struct pb_pageset pages;
};

struct learner {
	pid_t tgid;		/* 0: a free slot */
	int pidfd;		/* that process, whatever its PID is reused for */
	bool own_root;		/* in the daemon's root and mount namespace */
	dev_t exe_dev;		/* the program */
	ino_t exe_ino;
	uid_t uid;
	gid_t gid;
	int nr_groups;
	gid_t groups[MAX_GROUPS];
	bool dac_override;	/* root, with CAP_DAC_OVERRIDE at its exec */
	bool precise;		/* fault-around off from before its exec: each page
				 * it touched faulted (faultaround.c) */
	bool meta_only;		/* the patched kernel learns its pages: only its
				 * metadata list is learned, fault-around left alone */
	int root;		/* O_PATH descriptor of its root */
	char root_path[PATH_MAX];	/* the same, as /proc/PID/maps names files */
	uint64_t until_ms;
	struct stat exe_st;	/* the program, at the exec (/proc/PID/exe), */
	bool exe_known;		/* when it was the file exec'd */
	struct pb_pageset meta;	/* the pages of exe_dev's metadata it looked up, */
	uint64_t meta_pages;	/* so many; past META_MAX_PAGES, */
	bool meta_full;		/* the rest dropped */
	size_t chunks;		/* of its files' page sets */
	unsigned int maps_lines;	/* of /proc/PID/maps read (map_name()) */
	bool partial;		/* a page of its dropped: not written */
	uint64_t events_lost;	/* the ring buffer's losses at its exec */
	size_t nr_files;
	struct learn_file files[MAX_FILES];
};

static struct {
	struct bpf_object *obj;
	struct ring_buffer *rb;
	int learnable_fd, learners_fd, stats_fd, helpers_fd;
	size_t nr_learners;
	size_t fa_learners;	/* of them, those fault-around is off for (=windows) */
	size_t chunks;		/* of all learners' page sets */
	unsigned int events;	/* handled this turn */
	pid_t writers[MAX_WRITERS];
	/* each program's last learning run: one run per interval */
	struct { dev_t dev; ino_t ino; uint64_t when_ms; } last[MAX_PROGRAMS];
	unsigned int last_next;
	int report_fd;
	bool btrfs_typed;	/* learn.bpf.c relocated btrfs's types (btrfs_typed()) */
} L = { .learnable_fd = -1, .learners_fd = -1, .stats_fd = -1, .helpers_fd = -1 };
/* the runs followed: zeroed, outside L's initialiser, so not carried in the binary */
static struct learner learners[MAX_LEARNERS];

static void learn_finish(struct learner *l);

static __u64 kernel_dev(dev_t dev)
{
	return (__u64)major(dev) << 20 | minor(dev);
}

static dev_t user_dev(__u64 dev)
{
	return makedev((unsigned int)(dev >> 20), (unsigned int)(dev & 0xfffff));
}

static int quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!pb_verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* ---- what the parent keeps --------------------------------------------- */

static struct learner *learner_find(pid_t tgid)
{
	for (size_t i = 0; i < MAX_LEARNERS; i++)
		if (learners[i].tgid == tgid)
			return &learners[i];
	return NULL;
}

/* The faults the BPF ring buffer had no room for, since the daemon started. */
static uint64_t ring_losses(void)
{
	__u32 key = PBD_STAT_EVENTS_LOST;
	__u64 lost = 0;

	if (L.stats_fd >= 0 && !bpf_map_lookup_elem(L.stats_fd, &key, &lost))
		pbd.n.learn_events_lost = lost;
	return pbd.n.learn_events_lost;
}

static void learner_free(struct learner *l)
{
	__u32 key = (__u32)l->tgid;

	bpf_map_delete_elem(L.learners_fd, &key);
	for (size_t i = 0; i < l->nr_files; i++) {
		free(l->files[i].path);
		L.chunks -= l->files[i].pages.nr;
		pb_pageset_free(&l->files[i].pages);
	}
	L.chunks -= l->meta.nr;
	pb_pageset_free(&l->meta);
	if (l->root >= 0)
		close(l->root);
	if (l->pidfd >= 0)
		close(l->pidfd);
	L.nr_learners--;
	if (!l->meta_only && !--L.fa_learners && pbd.cfg.learn_fault_around == PBD_FA_WINDOWS)
		fault_around_on();
	memset(l, 0, sizeof(*l));
	l->root = l->pidfd = -1;
}

static uint64_t *last_run(dev_t dev, ino_t ino)
{
	for (unsigned int i = 0; i < MAX_PROGRAMS; i++)
		if (L.last[i].dev == dev && L.last[i].ino == ino)
			return &L.last[i].when_ms;
	return NULL;
}

static void note_run(dev_t dev, ino_t ino)
{
	uint64_t *when = last_run(dev, ino);

	if (!when) {
		L.last[L.last_next].dev = dev;
		L.last[L.last_next].ino = ino;
		when = &L.last[L.last_next].when_ms;
		L.last_next = (L.last_next + 1) % MAX_PROGRAMS;
	}
	*when = now_ms();
}

/*
 * Whether @l's mapping from @start to @end is of the file (@dev, @ino) as
 * stat(2) gives it: /proc/PID/map_files follows to the mapped
 * file itself.  Asked only where the file's stat(2) device is not its
 * filesystem's (a btrfs subvolume's): the maps line gives the latter, and
 * two subvolumes number their files alike (each one's first is 257).
 */
static bool map_is(const struct learner *l, unsigned long start, unsigned long end, dev_t dev,
		   ino_t ino)
{
	char path[96];
	struct stat st;

	/* unpadded: maps pads to 8 digits, and map_files takes no leading zero */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", (int)l->tgid, start, end);
	return !stat(path, &st) && st.st_dev == dev && st.st_ino == ino;
}

/*
 * The name of the file (@dev, @ino) in @l's mappings, relative to its
 * root; NULL when it has none there (exited, unmapped, deleted, or outside
 * its root).  @sb_dev is its filesystem's device, as /proc/PID/maps gives
 * it.  Read in the daemon's loop, at each new file of a run: a run reads
 * MAPS_LINES at most in all, so that a program with 65530 mappings
 * faulting on 256 files does not hold the loop (and held execs) for
 * seconds; a start-up's maps are a few hundred lines.
 */
static char *map_name(struct learner *l, dev_t dev, dev_t sb_dev, ino_t ino)
{
	char path[64], *line = NULL, *name = NULL;
	const char *rel;
	size_t cap = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)l->tgid);
	fp = fopen(path, "re");
	if (!fp)
		return NULL;
	while (!name && l->maps_lines < MAPS_LINES && getline(&line, &cap, fp) > 0) {
		unsigned long start, end;
		unsigned int maj, min;
		unsigned long long inode;
		int at = 0;
		char *p;

		l->maps_lines++;
		if (sscanf(line, "%lx-%lx %*s %*x %x:%x %llu %n", &start, &end, &maj, &min, &inode,
			   &at) != 5 || !at || inode != ino || makedev(maj, min) != sb_dev ||
		    (dev != sb_dev && !map_is(l, start, end, dev, ino)))
			continue;
		p = line + at;
		p[strcspn(p, "\n")] = '\0';
		rel = under_root(l->root_path, p);
		if (!rel || strstr(p, " (deleted)"))
			continue;
		name = strdup(rel);
	}
	free(line);
	fclose(fp);
	/* still that process: its PID not reused while its maps were read */
	if (name && syscall(SYS_pidfd_send_signal, l->pidfd, 0, NULL, 0)) {
		free(name);
		name = NULL;
	}
	return name;
}

/* The start time of @pid, as /proc/PID/stat gives it (clock ticks since boot). */
static bool start_ticks(pid_t pid, unsigned long long *ticks)
{
	char path[64], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_text(path, buf, sizeof(buf)) < 0)
		return false;
	p = strrchr(buf, ')');	/* the name may hold anything but this, last */
	return p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			   "%*d %*d %*d %*d %llu", ticks) == 1;
}

/*
 * Is @root (the descriptor taken of @pid's root) the daemon's root, and
 * @pid in the daemon's mount namespace?  The descriptor is compared, not
 * the name again: a process may chroot() between the two looks.
 */
static bool own_root(pid_t pid, int root)
{
	char path[64];
	struct stat a, b, c, d;

	if (fstat(root, &a) || stat("/", &b))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if (stat(path, &c) || stat("/proc/self/ns/mnt", &d))
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino && c.st_ino == d.st_ino;
}

/*
 * Take the learner's root, credentials and a pidfd: /proc reads, checked
 * to be of the process that exec'd (its start time, its user, then the
 * pidfd alive after them), not of another that got its PID since.
 */
static bool take_learner(struct learner *l, const struct pbd_learn_event *e)
{
	unsigned long long ticks, want = e->start / (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
	uint64_t caps;
	char path[64];
	ssize_t n;

	l->pidfd = (int)syscall(SYS_pidfd_open, l->tgid, 0);
	if (l->pidfd < 0 || !start_ticks(l->tgid, &ticks) || ticks != want)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)l->tgid);
	l->root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	n = readlink(path, l->root_path, sizeof(l->root_path) - 1);
	if (l->root < 0 || n <= 0 ||
	    task_creds(l->tgid, &l->uid, &l->gid, l->groups, MAX_GROUPS, &l->nr_groups, &caps) ||
	    l->uid != e->uid || l->gid != e->gid)
		return false;
	l->root_path[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)l->tgid);
	l->exe_known = !stat(path, &l->exe_st) && l->exe_st.st_dev == l->exe_dev &&
		       l->exe_st.st_ino == l->exe_ino;
	l->own_root = own_root(l->tgid, l->root);
	l->dac_override = l->uid == 0 && (caps & (1ull << CAP_DAC_OVERRIDE));
	return syscall(SYS_pidfd_send_signal, l->pidfd, 0, NULL, 0) == 0;
}

static unsigned int learners_of(uid_t uid)
{
	unsigned int n = 0;

	for (size_t i = 0; i < MAX_LEARNERS; i++)
		n += learners[i].tgid && learners[i].uid == uid;
	return n;
}

static void on_exec(const struct pbd_learn_event *e)
{
	struct learner *l = learner_find((pid_t)e->tgid);
	uint64_t *last = last_run(user_dev(e->dev), (ino_t)e->ino);
	__u32 key = e->tgid;

	if (l)		/* an exec within the window: the last program's run ends */
		learn_finish(l);
	if (!e->meta_only != !sysctl_on(pbd.kernel_learn_fd)) {
		/*
		 * vm.pbitmap_learn changed since the program was allowed:
		 * neither what the run would send nor whether it may be
		 * followed at all holds (learn_may_follow()).  Its next exec's
		 * child reads its record again (learn_allow()).
		 */
		struct pbd_learn_key program = { e->dev, e->ino };
		struct pbd_learn_who who;

		bpf_map_delete_elem(L.learners_fd, &key);
		/* not an entry its exec's child has made again meanwhile */
		if (!bpf_map_lookup_elem(L.learnable_fd, &program, &who) &&
		    !who.meta_only != !sysctl_on(pbd.kernel_learn_fd))
			bpf_map_delete_elem(L.learnable_fd, &program);
		pbd.n.learn_skip_switched++;
		return;
	}
	if (last && now_ms() - *last < pbd.cfg.learn_interval_s * 1000) {
		bpf_map_delete_elem(L.learners_fd, &key);	/* learned lately: not followed */
		pbd.n.learn_skip_recent++;
		return;
	}
	l = learner_find(0);
	if (!l || learners_of(e->uid) >= MAX_PER_USER) {
		bpf_map_delete_elem(L.learners_fd, &key);
		pbd.n.learn_lost++;
		return;
	}
	l->tgid = (pid_t)e->tgid;
	l->exe_dev = user_dev(e->dev);
	l->exe_ino = (ino_t)e->ino;
	l->root = l->pidfd = -1;
	l->until_ms = now_ms() + pbd.cfg.learn_window_ms;
	l->events_lost = ring_losses();
	/* =off: off since the daemon started; =windows: the run's first faults had it */
	l->precise = pbd.cfg.learn_fault_around == PBD_FA_OFF && pbd.fault_around == 1;
	/* the kernel learns the pages (learn_allow()), and turns fault-around off itself */
	l->meta_only = e->meta_only;
	L.nr_learners++;
	if (!l->meta_only && !L.fa_learners++ && pbd.cfg.learn_fault_around == PBD_FA_WINDOWS)
		fault_around_off();
	if (!take_learner(l, e)) {
		pbd.n.learn_lost++;	/* gone already */
		learner_free(l);
		return;
	}
	note_run(l->exe_dev, l->exe_ino);
	pbd.n.learners++;
}

static void on_fault(const struct pbd_learn_event *e)
{
	struct learner *l = learner_find((pid_t)e->tgid);
	dev_t dev = user_dev(e->dev), sb_dev = user_dev(e->sb_dev);
	struct learn_file *f = NULL;
	size_t nr;

	if (!l)
		return;
	pbd.n.learn_faults++;
	if (l->meta_only)	/* the BPF side sends none: the kernel learns them */
		return;
	for (size_t i = 0; i < l->nr_files && !f; i++)
		if (l->files[i].dev == dev && l->files[i].ino == (ino_t)e->ino)
			f = &l->files[i];
	if (!f) {
		/* the daemon writes only on the filesystems it watches */
		if (!is_local(sb_dev) || l->nr_files == MAX_FILES)
			return;
		f = &l->files[l->nr_files++];
		f->dev = dev;
		f->ino = (ino_t)e->ino;
		f->path = map_name(l, dev, sb_dev, f->ino);
		if (!f->path)
			pbd.n.learn_lost++;
	}
	if (!f->path)
		return;
	nr = f->pages.nr;
	if (nr >= FILE_CHUNKS || L.chunks >= ALL_CHUNKS || l->chunks >= RUN_CHUNKS ||
	    pb_pageset_add(&f->pages, e->index)) {
		pbd.n.learn_lost++;
		l->partial = true;
	}
	L.chunks += f->pages.nr - nr;
	l->chunks += f->pages.nr - nr;
}

/*
 * A look-up of a metadata block by @e's learner or its reader child: kept
 * when on the program's own device (the one its list is read from).
 */
static void on_meta(const struct pbd_learn_event *e)
{
	struct learner *l = learner_find((pid_t)e->tgid);
	size_t nr;

	/* only root's programs have lists (meta.c) */
	if (!l || !pbd.cfg.metadata || !l->exe_known || l->exe_st.st_uid != 0 ||
	    user_dev(e->dev) != l->exe_dev)
		return;
	nr = l->meta.nr;
	for (uint64_t i = 0, page, q; i < e->nr && i < 16 && !l->meta_full; i++) {
		page = e->index + i;
		if (pb_pageset_next(&l->meta, page, &q) && q == page)
			continue;	/* looked up before */
		if (l->meta_pages >= META_MAX_PAGES || l->meta.nr >= META_MAX_CHUNKS ||
		    L.chunks >= ALL_CHUNKS || pb_pageset_add(&l->meta, page)) {
			l->meta_full = true;	/* its list is this much: counted once */
			pbd.n.learn_lost++;
		} else {
			l->meta_pages++;
		}
	}
	L.chunks += l->meta.nr - nr;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct pbd_learn_event e;
	struct learner *l;

	(void)ctx;
	if (size < sizeof(e))
		return 0;
	memcpy(&e, data, sizeof(e));
	if (e.kind == PBD_LEARN_EXEC) {
		on_exec(&e);
	} else if (e.kind == PBD_LEARN_FAULT) {
		on_fault(&e);
	} else if (e.kind == PBD_LEARN_META) {
		on_meta(&e);
	} else if (e.kind == PBD_LEARN_EXIT) {
		l = learner_find((pid_t)e.tgid);
		if (l)
			learn_finish(l);
	}
	return ++L.events >= EVENTS_PER_TURN ? -1 : 0;	/* -1: the rest next turn */
}

/* ---- the writer, in a child ---------------------------------------------- */

/*
 * Root writes only where no user can change what a name leads to: every
 * directory on @path (in the daemon's own root) root's, a real directory,
 * writable by root alone.
 */
static bool root_path_safe(const char *path)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir) || dir[0] != '/')
		return false;
	while ((slash = strrchr(dir, '/'))) {
		slash[slash == dir] = '\0';	/* "/usr/lib/x" -> "/usr/lib", "/x" -> "/" */
		if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid || (st.st_mode & 022))
			return false;
		if (slash == dir)
			return true;
	}
	return false;
}

/*
 * @path (as root's pass looks at it) names root's file where no user can
 * change that, on a filesystem mounted with set-ID bits honoured: one
 * mounted nosuid is a user's to make (udisks mounts a user's USB stick so,
 * and its files and directories are root's if the stick says so).
 */
static bool root_owned(const char *path)
{
	struct statvfs vfs;
	struct stat st;

	return !pb_path_lstat(path, &st) && st.st_uid == 0 && root_path_safe(path) &&
	       !statvfs(path, &vfs) && !(vfs.f_flag & ST_NOSUID);
}

/*
 * Whether the opened, locked file @f is @lf and its record admits this
 * run's generation, written by @as_root or by the learner: the decision
 * made on the file the write goes to, not on a name looked at before.
 */
static bool admits(const struct learner *l, const struct learn_file *lf, struct pb_file *f,
		   bool as_root)
{
	uint32_t flags;
	time_t updated;

	if (f->st.st_ino != lf->ino || f->st.st_dev != lf->dev || !f->has_record) {
		pbd.n.learn_skip_changed++;
		return false;
	}
	flags = le32toh(pb_hdr(&f->rec)->flags);
	updated = (time_t)le64toh(pb_hdr(&f->rec)->last_update);
	if (updated && time(NULL) - updated < (time_t)pbd.cfg.learn_interval_s) {
		pbd.n.learn_skip_recent++;
		return false;
	}
	if (!(flags & PBITMAP_F_NO_LEARN) &&
	    (as_root ? f->st.st_uid == 0 && l->uid != 0 && (flags & PBITMAP_F_LEARN_EVERY) &&
		       pbd.cfg.learn == PBD_LEARN_EVERY &&
		       !(f->st.st_mode & (S_ISUID | S_ISGID)) &&
		       fgetxattr(f->fd, "security.capability", NULL, 0) < 0 && errno == ENODATA
		     : f->st.st_uid == l->uid))
		return true;
	pbd.n.learn_skip_policy++;
	return false;
}

/* ---- the program's plan ----------------------------------------------------- */

#define WINDOW_UNITS	16	/* fault_around_bytes (64 KiB), in plan units */
_Static_assert(PAGE_SIZE_LEARN == 1u << PBITMAP_PLAN_UNIT_SHIFT, "a learned page is a plan unit");

static bool is_program(const struct learner *l, const struct learn_file *lf)
{
	return lf->dev == l->exe_dev && lf->ino == l->exe_ino;
}

/*
 * What a plan reads of a file without a bitmap: the pages @lf's run
 * faulted, each widened to the window of @units around it (malloc'ed; NULL
 * when out of memory): 64 KiB, or one page when the run was learned with
 * fault-around off.  A fault maps the cached pages of its fault-around
 * window with it, and the program then touches those without a fault the
 * BPF side could see: read at exec, only the faulted pages would leave
 * those to the cold start's own faults.  The kernel aligns the window in
 * the address space, which a mapping matches to the page, not to 64 KiB:
 * aligned in the file here, it is as large, not always the same pages.
 * Clipped to the file's size by pb_plan_fill().
 */
static struct pb_plan_range *fault_windows(const struct learn_file *lf, uint32_t units,
					   size_t *nr)
{
	struct pb_plan_range *r = NULL, *bigger;
	size_t n = 0, cap = 0;
	uint64_t p;

	for (uint64_t from = 0; pb_pageset_next(&lf->pages, from, &p) &&
	     p < UINT32_MAX - units; from = p + 1) {
		uint32_t start = (uint32_t)p & ~(units - 1);

		if (n && start < r[n - 1].start + r[n - 1].nr)
			continue;	/* in the window before */
		if (n && start == r[n - 1].start + r[n - 1].nr) {
			r[n - 1].nr += units;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			bigger = realloc(r, cap * sizeof(*r));
			if (!bigger) {
				free(r);
				return NULL;
			}
			r = bigger;
		}
		r[n++] = (struct pb_plan_range){ .start = start, .nr = units };
	}
	*nr = n;
	return r ? r : calloc(1, sizeof(*r));	/* none: an empty list, not "whole" */
}

/*
 * Build @l's plan into the program's record @prog (its generation shifted
 * in, not saved: one write for both): the files the run faulted on, in
 * the order of their first faults (l->files[]), without an order table;
 * a stamped file with its bitmap as it stands (this run's generation in,
 * when written before: learn_child() writes the program last), another
 * with its fault windows.  Not the program: a plan naming its own file
 * goes stale with every write of it (cmd-plan.c).  pb_plan_fill() leaves
 * out a file no longer the inode that faulted, not a regular file, off
 * the local filesystems (pb_confine_local()), or with a path too long.
 * Built as root (@as_root: a program every run may learn), it names
 * root's files on paths no user can change only (root_owned()): a plan
 * every user's execs follow is not one user's to fill with their files,
 * and root does not open, let alone parse, what a user made.
 * 1: built; 0: not wanted (no area, or PBITMAP_DAEMON_LEARN_PLANS=no);
 * -1: could not be built, the area as it was (the old plan stays).
 */
static int learn_plan(const struct learner *l, struct pb_file *prog, bool as_root)
{
	struct pb_plan_range *ranges[MAX_FILES];
	struct pb_plan_src src[MAX_FILES];
	struct pb_plan_stats st;
	size_t n = 0, size;
	int ret = 1;

	if (!pbd.cfg.learn_plans || !pb_plan_area(&prog->rec, &size) || !size)
		return 0;
	for (size_t i = 0; i < l->nr_files && ret == 1; i++) {
		const struct learn_file *lf = &l->files[i];

		if (!lf->path || !pb_pageset_count(&lf->pages) || is_program(l, lf))
			continue;
		if (as_root && !root_owned(lf->path)) {
			if (pb_verbose)
				pb_note(lf->path, "left out of the plan: not root's, and the plan "
					"is learned from every user's runs");
			continue;
		}
		src[n] = (struct pb_plan_src){ .path = lf->path, .dev = lf->dev, .ino = lf->ino };
		ranges[n] = fault_windows(lf, l->precise ? 1 : WINDOW_UNITS, &src[n].nr_ranges);
		src[n].ranges = ranges[n];
		if (!ranges[n])
			ret = pb_error_errno(lf->path, "out of memory");
		else
			n++;
	}
	if (ret == 1 && (!n || pb_plan_fill(prog, src, n, PB_PLAN_LEAVE_OUT, &st)))
		ret = -1;
	while (n)
		free(ranges[--n]);
	if (ret == 1 && pb_verbose)
		pb_note(prog->path, "learned plan: %zu files, %zu KiB", st.files,
			st.units << (PBITMAP_PLAN_UNIT_SHIFT - 10));
	else if (ret < 0 && pb_verbose)
		pb_note(prog->path, "no plan learned: its plan area is left as it was");
	return ret;
}

/*
 * Write @lf's generation, if the file admits it; the program's with its
 * plan (learn_plan()).  The program itself, rewritten by a renamed copy,
 * has a new inode: the BPF side is told to follow that one (@r), else
 * every other run of it would go unlearned (written in place, it is the
 * same inode, told again: harmless).
 */
static void write_one(const struct learner *l, const struct learn_file *lf, bool as_root,
		      struct report *r)
{
	uint64_t marked = 0;
	struct pb_file f;
	bool stamped;
	int ret, plan = 0;

	/* most libraries carry no bitmap: a look first, no lock, no policy checks */
	if (pb_open(&f, lf->path, PB_OPEN_PROBE))
		return;
	stamped = f.has_record;
	pb_close(&f);
	if (!stamped)
		return;
	if (pb_open(&f, lf->path, PB_OPEN_WRITE)) {
		pbd.n.learn_skip_failed++;	/* said why: busy, locked, read-only ... */
		return;
	}
	if (!admits(l, lf, &f, as_root)) {
		pb_close(&f);
		return;
	}
	ret = pb_learn_shift_in(&f, &lf->pages, PAGE_SIZE_LEARN, &marked);
	if (!ret && is_program(l, lf))
		plan = learn_plan(l, &f, as_root);
	if (ret || pb_save_learned(&f)) {
		pbd.n.learn_skip_failed++;
	} else {
		pbd.n.learn_written++;
		pbd.n.learn_in_place += f.saved_in_place;
		pbd.n.learn_pages += marked;
		pbd.n.learn_plans += plan > 0;
		pbd.n.learn_skip_plan += plan < 0;
		if (is_program(l, lf)) {
			r->relearn = true;
			r->was_dev = lf->dev;
			r->was_ino = lf->ino;
			r->rec_flags = le32toh(pb_hdr(&f.rec)->flags);
			r->exe = f.st;	/* the new version's (pb_commit) */
		}
		if (pb_verbose)
			pb_note(lf->path, "learned: generation %" PRIu64 ", %" PRIu64 " of %"
				PRIu64 " pages, %s", le64toh(pb_hdr(&f.rec)->runs), marked,
				pb_nr_pages(&f.rec), f.saved_in_place ? "in place" :
				"by a renamed copy");
	}
	pb_close(&f);
}

/*
 * The order the files are written in: l->files[], but the program last,
 * after the other files of its pass, so that its plan takes their new
 * generations.  @k-th written, of @exe the program's index (nr_files:
 * none).
 */
static size_t nth_file(const struct learner *l, size_t k, size_t exe)
{
	if (k < exe)
		return k;
	return k + 1 < l->nr_files ? k + 1 : exe;
}

/*
 * Write @l's generations, in its root, confined to the local filesystems:
 * first, as root, the root-owned files that every run may learn (only for
 * a learner in the daemon's own root and namespace, on paths no user can
 * change); then, as the learner, its own files.  Names are only looked at
 * (lstat) before the open that decides (admits()).
 *
 * The program is written last in its pass (nth_file()), with its plan.
 * The root pass cannot come second (root's privileges are dropped for
 * good before the learner's), so when the program is root's and a
 * library the learner's own, the plan, written in the root pass, takes
 * that library's bitmap as it was before this run; and if the library is
 * then written by a renamed copy, not in place, the plan's entry names
 * its old inode, which the kernel and the daemon skip (an identity
 * mismatch) until the next learned plan.  A program of the learner's is
 * written after both passes' files: its plan has their new generations.
 */
static void __attribute__((noreturn)) learn_child(struct learner *l, int report_fd)
{
	struct report r = { .learn = true };
	int keep[] = { l->root, report_fd };
	bool done[MAX_FILES] = { false };
	size_t exe = 0;
	struct stat st;

	child_limits(keep, 2, WRITER_SECONDS, WRITER_CPU);
	setenv("PBITMAP_LOCK_TIMEOUT", "0", 1);	/* never wait on a lock */
	memset(&pbd.n, 0, sizeof(pbd.n));
	if (fchdir(l->root) || chroot(".") || chdir("/"))
		_exit(1);
	close(l->root);
	pb_confine_local(pbd.walk_devs, pbd.nr_walk_devs);
	while (exe < l->nr_files && !is_program(l, &l->files[exe]))
		exe++;
	for (size_t k = 0; k < l->nr_files; k++) {
		size_t i = nth_file(l, k, exe);
		struct learn_file *lf = &l->files[i];

		done[i] = !lf->path || !pb_pageset_count(&lf->pages);
		if (done[i] || !l->own_root || pbd.cfg.learn != PBD_LEARN_EVERY || l->uid == 0 ||
		    !root_owned(lf->path))
			continue;
		write_one(l, lf, true, &r);
		done[i] = true;
	}
	/*
	 * As the learner: its user and groups, and no capability but one.  A
	 * root learner that could override file permissions keeps that
	 * (CAP_DAC_OVERRIDE): its own write of a root-owned file of mode 0444
	 * (a git pack, a read-only database) would pass, and the kernel's
	 * learned write, judged with the learner's credentials, passes too.
	 * Nothing else: no CAP_FOWNER, CAP_CHOWN, CAP_LINUX_IMMUTABLE.
	 */
	/*
	 * The daemon itself may not hold CAP_DAC_OVERRIDE (a unit's bounding
	 * set without it): then the learner's write goes on without it, and a
	 * file only the override could write is refused and counted, rather
	 * than every root learner's write failing at the capset().  Only a
	 * root learner keeps it, so the first try left it root, with
	 * CAP_SETUID and CAP_SETGID, for the second.
	 */
	if (drop_privileges(l->uid, l->gid, l->groups, l->nr_groups,
			    l->dac_override ? 1u << CAP_DAC_OVERRIDE : 0) &&
	    (!l->dac_override || drop_privileges(l->uid, l->gid, l->groups, l->nr_groups, 0)))
		_exit(1);
	for (size_t k = 0; k < l->nr_files; k++) {
		size_t i = nth_file(l, k, exe);

		if (done[i])
			continue;
		/* not its own: not opened at all (the open decides for its own) */
		if (pb_path_lstat(l->files[i].path, &st)) {
			pbd.n.learn_skip_changed++;
			continue;
		}
		if (st.st_uid != l->uid) {
			pbd.n.learn_skip_policy++;
			continue;
		}
		write_one(l, &l->files[i], false, &r);
	}
	r.n = pbd.n;
	child_report(report_fd, &r);
}

static unsigned int writers_running(void)
{
	unsigned int n = 0;

	for (size_t i = 0; i < MAX_WRITERS; i++)
		n += L.writers[i] != 0;
	return n;
}

/*
 * A child has been reaped (main.c): if it was a writer, its slot is free,
 * and if its limits killed it, what it had not written is counted.
 */
bool learn_reaped(pid_t pid, bool failed)
{
	if (L.helpers_fd >= 0) {
		__u32 key = (__u32)pid;

		bpf_map_delete_elem(L.helpers_fd, &key);
	}
	for (size_t i = 0; i < MAX_WRITERS; i++)
		if (L.writers[i] == pid) {
			L.writers[i] = 0;
			pbd.n.learn_skip_failed += failed;
			return true;
		}
	return false;
}

static void learn_finish(struct learner *l)
{
	bool any = false;
	pid_t child;

	/*
	 * Before the writer: a program rewritten by it has its list moved
	 * after (main.c).  on_meta() kept pages only when exe_st is known.
	 */
	if (l->meta_pages)
		meta_save(&l->exe_st, &l->meta, l->meta_pages);
	for (size_t i = 0; i < l->nr_files; i++)
		any |= l->files[i].path && pb_pageset_count(&l->files[i].pages);
	/*
	 * A run some of whose faults were dropped (no room in its share, or in
	 * the ring buffer while it ran) is not written: its generation would
	 * say pages it used went unused, and aging drops such pages.
	 */
	if (any && (l->partial || ring_losses() > l->events_lost)) {
		pbd.n.learn_skip_partial++;
	} else if (any && writers_running() >= MAX_WRITERS) {
		/* a few writers at once: no user fills the daemon's children */
		pbd.n.learn_lost++;
	} else if (any) {
		child = fork();
		if (child == 0)
			learn_child(l, L.report_fd);
		if (child > 0) {
			kid_started(child, WRITER_SECONDS, 0);
			for (size_t i = 0; i < MAX_WRITERS; i++)
				if (!L.writers[i]) {
					L.writers[i] = child;
					break;
				}
		} else {
			pbd.n.learn_skip_failed++;
		}
	}
	learner_free(l);
}

/* ---- what the event loop calls ------------------------------------------- */

/*
 * The metadata look-ups' attach point, bdev_getblk(), is not loaded where
 * the running kernel has no such function (before 6.7) or metadata lists
 * are off: learning goes on without them.
 */
static void meta_attach_point(void)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(L.obj, "pbd_meta");
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool there = vmlinux && btf__find_by_name_kind(vmlinux, "bdev_getblk", BTF_KIND_FUNC) > 0;

	btf__free(vmlinux);
	if (!prog || (there && pbd.cfg.metadata))
		return;
	bpf_program__set_autoload(prog, false);
	if (pbd.cfg.metadata) {
		pbd.cfg.metadata = false;
		pb_note(NULL, "this kernel has no bdev_getblk(): metadata lists are off");
	}
}

/*
 * Whether btrfs's inode type is in the kernel's BTF or in its module's, as
 * learn.bpf.c's inode_key() needs it to give a btrfs file the device
 * stat(2) gives.  Asked before the object loads: what is there then was
 * there for its relocations.
 */
static bool btrfs_typed(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf(), *mod = NULL;
	bool found;

	if (!vmlinux)
		return false;
	found = btf__find_by_name_kind(vmlinux, "btrfs_inode", BTF_KIND_STRUCT) >= 0;
	if (!found) {
		mod = btf__load_module_btf("btrfs", vmlinux);
		found = mod && btf__find_by_name_kind(mod, "btrfs_inode", BTF_KIND_STRUCT) >= 0;
	}
	btf__free(mod);
	btf__free(vmlinux);
	return found;
}

/*
 * Whether the files of a btrfs mounted now can be learned: learning is off,
 * or btrfs's types were there when it loaded.  Not: a btrfs module loaded
 * since the daemon started (mark_local() says so).
 */
bool learn_knows_btrfs(void)
{
	return !L.obj || L.btrfs_typed;
}

int learn_start(int report_fd)
{
	struct pbd_learn_config cfg = { .window_ns = pbd.cfg.learn_window_ms * 1000000 };
	struct bpf_link *links[8] = { NULL };
	struct bpf_program *prog;
	size_t nr_links = 0;
	__u32 zero = 0;
	int err;

	L.report_fd = report_fd;
	for (size_t i = 0; i < MAX_LEARNERS; i++)
		learners[i].root = learners[i].pidfd = -1;
	libbpf_set_print(quiet_libbpf);
	L.obj = bpf_object__open_mem(pbd_learn_obj, (size_t)(pbd_learn_obj_end - pbd_learn_obj),
				     NULL);
	err = L.obj ? 0 : -errno;
	if (!err)
		meta_attach_point();
	if (!err) {
		L.btrfs_typed = btrfs_typed();
		err = bpf_object__load(L.obj);
	}
	if (!err) {
		bpf_object__for_each_program(prog, L.obj) {
			struct bpf_link *link;

			if (!bpf_program__autoload(prog))
				continue;
			link = nr_links < sizeof(links) / sizeof(links[0]) ?
			       bpf_program__attach(prog) : NULL;
			if (link) {
				links[nr_links++] = link;
			} else if (!strcmp(bpf_program__name(prog), "pbd_meta")) {
				pbd.cfg.metadata = false;	/* learning goes on without */
				pb_note(NULL, "bdev_getblk() cannot be traced: metadata lists "
					"are off");
			} else {
				err = -errno;
				break;
			}
		}
	}
	if (!err) {
		L.learnable_fd = bpf_object__find_map_fd_by_name(L.obj, "learnable");
		L.learners_fd = bpf_object__find_map_fd_by_name(L.obj, "learners");
		L.stats_fd = bpf_object__find_map_fd_by_name(L.obj, "stats");
		L.helpers_fd = bpf_object__find_map_fd_by_name(L.obj, "helpers");
		L.rb = ring_buffer__new(bpf_object__find_map_fd_by_name(L.obj, "events"),
					on_event, NULL, NULL);
		if (!L.rb || bpf_map_update_elem(bpf_object__find_map_fd_by_name(L.obj, "config"),
						 &zero, &cfg, BPF_ANY))
			err = -errno;
	}
	if (err) {
		for (size_t i = 0; i < nr_links; i++)
			bpf_link__destroy(links[i]);	/* NULL: nothing */
		ring_buffer__free(L.rb);
		bpf_object__close(L.obj);
		L.rb = NULL;
		L.obj = NULL;
		L.learnable_fd = L.learners_fd = L.stats_fd = L.helpers_fd = -1;
		pb_error(NULL, "learning is off: its BPF programs did not load (%s); "
			 "pbitmapd needs a kernel with BTF (6.12 or later)", strerror(-err));
		return PB_FAIL;
	}
	if (!L.btrfs_typed && pbd.btrfs_watched)
		pb_note(NULL, "files on btrfs are not learned: btrfs has no BTF here");
	return ring_buffer__epoll_fd(L.rb);
}

void learn_events(void)
{
	L.events = 0;
	if (L.rb)
		ring_buffer__consume(L.rb);
}

/* Whether @l is a run followed past its window, at @now. */
static bool window_ended(const struct learner *l, uint64_t now)
{
	return l->tgid && now > l->until_ms;
}

/*
 * Runs whose window has ended, the program running on: written now, and
 * counted (learn_window_ended: what the program faults later is not
 * learned, and a slow start-up learns only its first window_ms).  The
 * events already in the ring buffer are taken in first: they are of the
 * window, and a poll that did not report them would leave them out.
 */
void learn_tick(void)
{
	uint64_t now = now_ms();
	bool ended = false;

	for (size_t i = 0; i < MAX_LEARNERS && !ended; i++)
		ended = window_ended(&learners[i], now);
	if (ended)
		learn_events();		/* may finish a run that exited meanwhile */
	for (size_t i = 0; i < MAX_LEARNERS; i++)
		if (window_ended(&learners[i], now)) {
			pbd.n.learn_window_ended++;
			learn_finish(&learners[i]);
		}
	ring_losses();
}

bool learn_pending(void)
{
	return L.nr_learners > 0;
}

/* @child, a reader, serves @serves' exec: its look-ups count for that run. */
void learn_helper(pid_t child, pid_t serves)
{
	__u32 key = (__u32)child, value = (__u32)serves;

	if (L.helpers_fd >= 0 && pbd.cfg.metadata)
		bpf_map_update_elem(L.helpers_fd, &key, &value, BPF_ANY);
}

/*
 * Whether runs of the program @st may be followed at all, whatever its
 * record says: learning loaded and on, and where the patched kernel
 * learns the pages itself (vm.pbitmap_learn not 0), a metadata list to
 * learn that will be read (root's programs: meta.c), which the kernel
 * does not.
 */
bool learn_may_follow(const struct stat *st)
{
	return L.learnable_fd >= 0 && pbd.cfg.learn != PBD_LEARN_NO &&
	       (!sysctl_on(pbd.kernel_learn_fd) || (meta_readable() && st->st_uid == 0));
}

/*
 * A stamped program's record was read (@st, its flags): whose runs of it
 * the BPF side is to follow, if any (learn_may_follow()).
 */
void learn_allow(const struct stat *st, uint32_t flags)
{
	struct pbd_learn_key key = { kernel_dev(st->st_dev), st->st_ino };
	struct pbd_learn_who who = { .owner = st->st_uid };

	if (L.learnable_fd < 0)
		return;
	if (!learn_may_follow(st) || (flags & PBITMAP_F_NO_LEARN)) {
		bpf_map_delete_elem(L.learnable_fd, &key);
		return;
	}
	/* every user's runs are written as root: of root's files only (learn_child()) */
	who.anyone = (flags & PBITMAP_F_LEARN_EVERY) && pbd.cfg.learn == PBD_LEARN_EVERY &&
		     st->st_uid == 0 && !(st->st_mode & (S_ISUID | S_ISGID));
	who.meta_only = sysctl_on(pbd.kernel_learn_fd);
	bpf_map_update_elem(L.learnable_fd, &key, &who, BPF_ANY);
}
