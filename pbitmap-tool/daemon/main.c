// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmapd: pbitmap's start-up prefetch on the kernels people run.
 *
 * Without the kernel series, nothing reads a stamped program's pages ahead
 * unless the user puts `pbitmap run` in front of it.  pbitmapd watches the
 * local filesystems for execs (fanotify, FAN_OPEN_EXEC) and, for a stamped
 * program, starts the reads an exec on the patched kernel would start: the
 * program's plan, or its own marked pages and those of the libraries ld.so
 * is about to map (prefetch.c, as `pbitmap run` finds them); the program's
 * and, without a plan, the libraries' pages are left to the kernel's
 * read-ahead where its window is as wide as a request (child.c).
 *
 * Why these mechanisms:
 *   - Notification events, not permission events: the exec never waits for
 *     the daemon.  The reads race the program's own faults, and win where
 *     the loader's work gives them time; an exec that the daemon is too late
 *     for is an exec as without it.
 *   - A marked filesystem (FAN_MARK_FILESYSTEM), not mounts: bind mounts
 *     and containers' views of the same filesystem are covered.  Only local
 *     block filesystems are marked (the kernel's pbitmap_fs_local()).
 *   - An unstamped program costs one fgetxattr() of user.pbitmap here, and
 *     its exec nothing but the event: stamped ELF files carry that marker
 *     (docs/FORMAT.md) so that nobody has to parse their section headers.
 *   - Data files (a record in user.pbitmap) are read ahead when opened,
 *     as the kernel reads them at mmap, and as their opener (an open for
 *     writing only reads nothing its user may not): a second group
 *     reports opens by file handle (FAN_REPORT_FID), so that the kernel
 *     opens nothing for the daemon (no FIFO, no device) and an unstamped
 *     open costs one handle look-up and one attribute look-up here, and
 *     with a pidfd of the opener (FAN_REPORT_PIDFD), not a PID that
 *     another process may have by the time the event is read.
 *   - Each stamped exec is handled by a child that chroot()s into the
 *     exec'ing task's root (/proc/PID/root: its mount namespace, its
 *     container) and takes that task's filesystem credentials: paths
 *     resolve as the program sees them, and nothing is read that its user
 *     could not read.  A pidfd (FAN_REPORT_PIDFD) says that PID was still
 *     the exec'ing process when its root and credentials were taken.
 *   - The child's look-ups stay on the local filesystems (pb_confine_local:
 *     no NFS, FUSE or cluster round trip), open no FIFO or device, and run
 *     under a CPU limit and an alarm: a crafted record or plan costs bounded
 *     work, in a process that holds nothing anybody waits for.
 *
 * Killed at any point, pbitmapd leaves nothing half-done: it writes no file
 * but its status file (renamed into place), and nothing waits on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "pbitmapd.h"
#include "cli.h"

struct pbd_state pbd = { .kernel_fd = -1, .kernel_learn_fd = -1,
			 .own_fds = { -1, -1, -1, -1 } };

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char usage_text[] =
	"Usage: pbitmapd [-c FILE] [-s FILE] [-S DIR] [-v]\n"
	"       pbitmapd --check-enabled [-c FILE]\n"
	"       pbitmapd --print-config [-c FILE]\n"
	"       pbitmapd --restore-fault-around [-s FILE]\n"
	"Read the marked pages of stamped programs at their exec, on any kernel.\n"
	"\n"
	"  -c, --config FILE   settings (default " DEFAULT_CONFIG ")\n"
	"  -s, --status FILE   where to keep the counters (default " PB_DAEMON_STATUS ")\n"
	"  -S, --state-dir DIR where to keep the metadata lists (default " PB_DAEMON_STATE ")\n"
	"  -v, --verbose       log every stamped exec\n"
	"      --check-enabled exit 0 if the settings enable the daemon, else 1\n"
	"      --print-config  print the settings it would run with, and their sources\n"
	"      --restore-fault-around\n"
	"                      put back the fault_around_bytes a killed daemon changed\n"
	"  -h, --help          this text\n"
	"      --version       the version\n"
	"See pbitmapd(8).\n";

void pb_print_verb_help(const char *name)
{
	(void)name;
	fputs(usage_text, stdout);
}

/* ---- the parent ---------------------------------------------------------- */

/* @serves: the pid whose exec child @pid is (kid_serving()), else 0 */
void kid_started(pid_t pid, unsigned int seconds, pid_t serves)
{
	size_t i, slot = MAX_CHILDREN;

	pbd.children++;
	/* a free slot, else an ended child's: a running child's opens matter more */
	for (i = 0; i < MAX_CHILDREN && pbd.kids[i].pid; i++)
		if (pbd.kids[i].ended && slot == MAX_CHILDREN)
			slot = i;
	if (i < MAX_CHILDREN)
		slot = i;
	if (slot == MAX_CHILDREN)
		return;
	pbd.kids[slot].pid = pid;
	pbd.kids[slot].serves = serves;
	pbd.kids[slot].deadline_ms = now_ms() + (seconds + 2) * 1000;
	pbd.kids[slot].ended = false;
}

/*
 * A child reaped: no longer counted, but kept in the table (ended) until
 * kids_forget_ended(), so that the opens it queued before it exited are
 * still known as its own (reap()).  Counted down even without a slot (a
 * child started when the table was full): every pid reaped is a child.
 */
static void kid_ended(pid_t pid)
{
	if (pbd.children)
		pbd.children--;
	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (pbd.kids[i].pid == pid && !pbd.kids[i].ended) {
			pbd.kids[i].ended = true;
			return;
		}
}

static void kids_forget_ended(void)
{
	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (pbd.kids[i].ended) {
			pbd.kids[i].pid = 0;
			pbd.kids[i].ended = false;
		}
}

/* Whether an ended child is still in the table (kids_forget_ended()). */
static bool kids_any_ended(void)
{
	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (pbd.kids[i].ended)
			return true;
	return false;
}

/* Whether @pid is one of the daemon's own children (readers, writers). */
static bool own_kid(pid_t pid)
{
	for (size_t i = 0; pid > 0 && i < MAX_CHILDREN; i++)
		if (pbd.kids[i].pid == pid)
			return true;
	return false;
}

/* The running child reading ahead for @pid's exec, or 0. */
static pid_t kid_serving(pid_t pid)
{
	for (size_t i = 0; pid > 0 && i < MAX_CHILDREN; i++)
		if (pbd.kids[i].pid && !pbd.kids[i].ended && pbd.kids[i].serves == pid)
			return pbd.kids[i].pid;
	return 0;
}

/*
 * Children whose deadline is before @t, killed: with now_ms(), those past
 * their alarm, so that no user can fill the slots and turn the daemon off
 * (a stopped child is killed as soon as it stops, reap(); this is for one
 * that runs on past its alarm and CPU limit, blocked in the kernel, say);
 * with UINT64_MAX, every one (stop()).
 */
static void kill_kids_before(uint64_t t)
{
	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (pbd.kids[i].pid && !pbd.kids[i].ended && t > pbd.kids[i].deadline_ms)
			kill(pbd.kids[i].pid, SIGKILL);
}

/* Whether the file was read ahead in this or the previous second (@now). */
static bool read_recently(dev_t dev, ino_t ino, time_t now)
{
	for (unsigned int i = 0; i < RECENT_SLOTS; i++)
		if (pbd.recent[i].dev == dev && pbd.recent[i].ino == ino && now - pbd.recent[i].when < 2)
			return true;
	return false;
}

static void note_read(dev_t dev, ino_t ino, time_t now)
{
	pbd.recent[pbd.recent_next] = (struct recent){ dev, ino, now };
	pbd.recent_next = (pbd.recent_next + 1) % RECENT_SLOTS;
}

/* A file let through that was not read after all (its data child's report). */
static void forget_read(dev_t dev, ino_t ino)
{
	for (unsigned int i = 0; i < RECENT_SLOTS; i++)
		if (pbd.recent[i].dev == dev && pbd.recent[i].ino == ino)
			pbd.recent[i].when = 0;
}

/* A patched kernel's sysctl (@fd kept open, -1 on a stock kernel) not 0. */
bool sysctl_on(int fd)
{
	char c;

	return fd >= 0 && pread(fd, &c, 1, 0) == 1 && c != '0';
}

/*
 * Whether a stamped file (@st) may be read ahead now, by an exec's or an
 * open's child; counts why not.  Only a file let through is "recent": one
 * skipped while the children were all busy, or under pressure, is read
 * at its next exec or open, however soon.
 */
static bool may_start(const struct stat *st, time_t now)
{
	if (read_recently(st->st_dev, st->st_ino, now))
		pbd.n.skip_recent++;
	else if (pbd.children >= pbd.cfg.children)
		pbd.n.skip_busy++;
	else if (pbd.cfg.pressure < 100 && memory_pressure() > pbd.cfg.pressure)
		pbd.n.skip_pressure++;
	else {
		note_read(st->st_dev, st->st_ino, now);
		return true;
	}
	return false;
}

/*
 * Whether to hand this exec to a child; counts why not.  On a patched
 * kernel that prefetches (vm.pbitmap_enabled), the exec's pages and plan
 * are the kernel's; its metadata list, which the kernel does not read,
 * is still the daemon's (*@meta_only), and so is learning what the
 * kernel does not learn: the child reads the record whose policy says
 * whose runs may be followed (learn_allow()).  *@holds: the child reads
 * what the exec will need, worth holding it for (hold.c); a child that
 * only reads the record for learning is not.
 */
static bool wanted(int fd, time_t now, bool *meta_only, bool *holds)
{
	char marker[64];
	struct stat st;

	pbd.n.execs++;
	/* ERANGE: a value longer than a marker, a script's record */
	if (fgetxattr(fd, PBITMAP_XATTR_NAME, marker, sizeof(marker)) < 0 && errno != ERANGE) {
		pbd.n.unstamped++;
		return false;
	}
	if (fstat(fd, &st)) {
		pbd.n.skip_failed++;
		return false;
	}
	*meta_only = sysctl_on(pbd.kernel_fd);
	*holds = !*meta_only || meta_listed(&st);
	if (*meta_only) {
		pbd.n.skip_kernel++;
		if (!*holds && !learn_may_follow(&st))
			return false;
	}
	return may_start(&st, now);
}

/* The event's information record of @type, or NULL. */
static const void *event_info(const struct fanotify_event_metadata *m, unsigned int type)
{
	const char *p = (const char *)m + m->metadata_len, *end = (const char *)m + m->event_len;

	while (p + sizeof(struct fanotify_event_info_header) <= end) {
		const struct fanotify_event_info_header *h = (const void *)p;

		if (h->len < sizeof(*h) || p + h->len > end)
			break;
		if (h->info_type == type)
			return h;
		p += h->len;
	}
	return NULL;
}

static int event_pidfd(const struct fanotify_event_metadata *m)
{
	const struct fanotify_event_info_pidfd *info = event_info(m, FAN_EVENT_INFO_TYPE_PIDFD);

	return info ? info->pidfd : -1;
}

/*
 * An exec: a child reads ahead for a stamped program.  A held exec
 * (FAN_OPEN_EXEC_PERM, hold.c) is answered now when there is nothing it
 * needs to read, else when its child has submitted and exited, or at its
 * deadline.
 */
static void handle_event(const struct fanotify_event_metadata *m, int report_fd, time_t now)
{
	bool hold = m->mask & FAN_OPEN_EXEC_PERM, meta_only = false, holds = false;
	int pidfd = event_pidfd(m), fan = pbd.own_fds[0];
	pid_t child = -1;

	if (m->fd >= 0 && (m->mask & (FAN_OPEN_EXEC | FAN_OPEN_EXEC_PERM)) &&
	    wanted(m->fd, now, &meta_only, &holds)) {
		child = fork();
		if (child == 0)
			exec_child(m->fd, m->pid, pidfd, report_fd, meta_only);
		if (child > 0) {
			kid_started(child, CHILD_SECONDS, m->pid);
			learn_helper(child, m->pid);
		}
		else
			pbd.n.skip_failed++;
	}
	if (hold && child > 0 && holds) {
		hold_add(fan, m->fd, child);	/* the descriptor kept until answered */
	} else if (m->fd >= 0) {
		if (hold)
			hold_allow(fan, m->fd);
		close(m->fd);
	}
	if (pidfd >= 0)
		close(pidfd);
}


/* ---- data files, at their open -------------------------------------------- */

/*
 * Whether a file opened (@fd, O_PATH) by process @pid (@pidfd, the
 * event's) is a stamped data file to read ahead, and may be now
 * (may_start(): then "recent").  Not where the kernel's faults read it
 * better (data_rule(); an open is never held).
 */
static bool data_wanted(int fd, pid_t pid, int pidfd, time_t now)
{
	static unsigned char value[65536];	/* the largest attribute value */
	char self[64];
	struct stat st;
	ssize_t n;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = getxattr(self, PBITMAP_XATTR_NAME, value, sizeof(value));
	if (n < 0 || !pb_attr_is_record(value, (size_t)n))
		return false;	/* unstamped, or an ELF file's marker: execs are the other group's */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return false;
	if (sysctl_on(pbd.kernel_fd)) {	/* the patched kernel prefetches itself */
		pbd.n.skip_kernel++;
		return false;
	}
	if (pb_leaves(data_rule(false), st.st_dev)) {
		pbd.n.data_to_kernel++;
		if (pb_verbose) {
			char name[PATH_MAX];
			ssize_t len = readlink(self, name, sizeof(name) - 1);

			name[len > 0 ? len : 0] = '\0';
			pb_note(len > 0 ? name : self, "opened by pid %d: data file left to the kernel",
				(int)pid);
		}
		return false;
	}
	/*
	 * The opener, while it is one: read as (data_child()).  Its PID
	 * could name another process once it has been reaped; the event's
	 * pidfd (FAN_REPORT_PIDFD) is made of the opener itself (the event
	 * pins its struct pid) when the event is read, and is none
	 * (FAN_NOPIDFD) once it has been reaped, or FAN_EPIDFD when it could
	 * not be made (the daemon out of descriptors or memory: a failure,
	 * not a gone opener).  The identity read by PID in /proc is checked
	 * against it afterwards (as_opener()): no process given the opener's
	 * PID is read as.
	 */
	if (pidfd < 0) {
		if (pidfd == FAN_EPIDFD)
			pbd.n.skip_failed++;
		else
			pbd.n.data_skip_gone++;
		return false;
	}
	return may_start(&st, now);
}

/*
 * The root of the filesystem of the open events being handled, kept for
 * the rest of their buffer and closed after it (read_events()): one open
 * for a burst of events rather than one each (on this project's host, 20000
 * opens cost the daemon 11.7-11.9 us an event with a root opened for each,
 * 8.4-8.5 like this, 8.3-9.7 with one kept open:
 * docs/bench/2026-12-04-open-event-cost.md), and no filesystem
 * kept busy between bursts, so that it can be unmounted.
 */
static struct {
	const struct watched_fs *fs;
	int fd;
} burst_root = { .fd = -1 };

static void burst_root_close(void)
{
	if (burst_root.fd >= 0)
		close(burst_root.fd);
	burst_root.fd = -1;
	burst_root.fs = NULL;	/* mark_local() moves and drops entries */
}

static int burst_root_open(const struct watched_fs *fs)
{
	if (burst_root.fd >= 0 && burst_root.fs == fs)
		return burst_root.fd;
	burst_root_close();
	burst_root.fd = fs ? fs_root_open(fs) : -1;
	burst_root.fs = fs;
	return burst_root.fd;
}

/*
 * The file of an open event, O_PATH (nothing is opened for reading until
 * it is known to be a data file), by its handle: -1 and errno when it
 * cannot be (ESTALE: deleted since; ENODEV: its filesystem not watched,
 * or no longer mounted where it was).
 */
static int event_file(const struct fanotify_event_info_fid *fid)
{
	struct file_handle *handle = fid ? (struct file_handle *)(uintptr_t)fid->handle : NULL;
	int root;

	/* the handle within its record: open_by_handle_at() reads handle_bytes of it */
	if (fid && (fid->hdr.len < sizeof(*fid) + sizeof(*handle) ||
		    handle->handle_bytes > fid->hdr.len - sizeof(*fid) - sizeof(*handle)))
		fid = NULL;
	root = fid ? burst_root_open(fs_of_event(&fid->fsid, handle_subvol(handle))) : -1;

	if (root < 0) {
		errno = ENODEV;
		return -1;
	}
	return open_by_handle_at(root, handle, O_PATH | O_CLOEXEC);
}

static void open_event(const struct fanotify_event_metadata *m, int opener, int report_fd, time_t now)
{
	const struct fanotify_event_info_fid *fid = event_info(m, FAN_EVENT_INFO_TYPE_FID);
	pid_t child, exec_kid;
	int fd, after;

	/*
	 * The daemon's own (its status file, where that is on a watched
	 * filesystem): not an event, or each rewrite of the status file
	 * would call for the next one a second later, for ever.
	 */
	if (m->pid == getpid())
		return;
	pbd.n.opens++;
	if (!(m->mask & FAN_OPEN))
		return;
	/*
	 * An exec child opening a data file its program's plan lists (the
	 * benchmark's git pack) is not its opener: a data child started by
	 * that open would read the file beside the exec child, cutting each
	 * other's ranges into more requests (on 7.3, 135-166 requests a run
	 * became 237-454), and the program's own open, 2 s "recent" then,
	 * would start none.  A child is in the table before any event of
	 * its own is read, and stays there until the events queued by its
	 * end are (reap()).
	 */
	if (own_kid(m->pid)) {
		pbd.n.own_opens++;
		return;
	}
	fd = event_file(fid);
	if (fd < 0) {
		/*
		 * ESTALE: deleted since (a temporary file opened and
		 * unlinked at once), as usual.  Anything else (ENOMEM, a
		 * policy refusing the call after the start's probe, a
		 * filesystem unmounted or mounted over) is counted, or data
		 * files would stop being read ahead without a trace.
		 */
		if (errno != ESTALE)
			pbd.n.skip_handle++;
		return;
	}
	if (data_wanted(fd, m->pid, opener, now)) {
		/*
		 * Opened by a process whose exec is still being read ahead:
		 * its plan may list the file (the benchmark's git pack, 13.5
		 * of its 41 MB), and two children reading one file at once cut
		 * each other's ranges into more requests.  The data child
		 * waits for the exec's (data_child()), then reads what is not
		 * cached or in flight by then.
		 */
		exec_kid = kid_serving(m->pid);
		after = exec_kid ? (int)syscall(SYS_pidfd_open, exec_kid, 0) : -1;
		child = fork();
		if (child == 0)
			data_child(fd, m->pid, opener, after, report_fd);
		if (after >= 0)
			close(after);
		if (child > 0) {
			kid_started(child, CHILD_SECONDS, 0);
		} else {
			pbd.n.skip_failed++;
		}
	}
	close(fd);
}

/* An open: its opener's pidfd, whatever becomes of the event, closed after it. */
static void handle_open(const struct fanotify_event_metadata *m, int report_fd, time_t now)
{
	int pidfd = event_pidfd(m);

	open_event(m, pidfd, report_fd, now);
	if (pidfd >= 0)
		close(pidfd);
}

/* The daemon's own CPU time so far (its thread: children are not in it). */
static uint64_t thread_cpu_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Read what @fan has, one buffer of it, through @handle, adding the CPU
 * time it took to *@cpu_us (one clock read per buffer, not per event).
 * Events of a group that reports file handles are 4-byte aligned in the
 * buffer: each is copied to an aligned place before its 8-byte fields are
 * read.  Return: whether there were events.
 */
static bool read_events(int fan, int report_fd,
			void (*handle)(const struct fanotify_event_metadata *, int, time_t),
			uint64_t *cpu_us)
{
	static char buf[8192];
	static union {
		struct fanotify_event_metadata m;
		char bytes[sizeof(buf)];
	} ev;
	time_t now = (time_t)(now_ms() / 1000);	/* monotonic: a clock step changes nothing */
	uint64_t cpu0 = thread_cpu_us(), cpu1;
	ssize_t n = read(fan, buf, sizeof(buf));

	if (n <= 0)	/* nothing queued (reap() reads without poll()) */
		return false;
	for (size_t off = 0; n > 0 && off + FAN_EVENT_METADATA_LEN <= (size_t)n;) {
		memcpy(&ev.m, buf + off, FAN_EVENT_METADATA_LEN);
		if (ev.m.event_len < FAN_EVENT_METADATA_LEN || off + ev.m.event_len > (size_t)n)
			break;
		memcpy(ev.bytes, buf + off, ev.m.event_len);
		if (ev.m.vers == FANOTIFY_METADATA_VERSION && (ev.m.mask & FAN_Q_OVERFLOW)) {
			pbd.n.queue_overflows++;	/* events dropped: said, not silent */
		} else if (ev.m.vers == FANOTIFY_METADATA_VERSION) {
			handle(&ev.m, report_fd, now);
		} else if (ev.m.fd >= 0) {	/* a layout not known: let it go, unread */
			if (ev.m.mask & FAN_OPEN_EXEC_PERM)
				hold_allow(fan, ev.m.fd);
			close(ev.m.fd);
		}
		off += ev.m.event_len;
	}
	burst_root_close();
	cpu1 = thread_cpu_us();
	if (cpu0 && cpu1 > cpu0)	/* 0: the clock failed, nothing to add */
		*cpu_us += cpu1 - cpu0;
	return true;
}

/*
 * Read @fan until it is empty, at most READ_ROUNDS buffers (reap()):
 * whether it was found empty.
 */
static bool read_queued(int fan, int report_fd,
			void (*handle)(const struct fanotify_event_metadata *, int, time_t),
			uint64_t *cpu_us)
{
	for (int rounds = 0; rounds < READ_ROUNDS; rounds++)
		if (!read_events(fan, report_fd, handle, cpu_us))
			return true;
	return false;
}

/* A learning run's writer: its counters. */
static void add_learn_report(const struct counters *n)
{
	pbd.n.learn_written += n->learn_written;
	pbd.n.learn_in_place += n->learn_in_place;
	pbd.n.learn_pages += n->learn_pages;
	pbd.n.learn_plans += n->learn_plans;
	pbd.n.learn_skip_plan += n->learn_skip_plan;
	pbd.n.learn_skip_recent += n->learn_skip_recent;
	pbd.n.learn_skip_policy += n->learn_skip_policy;
	pbd.n.learn_skip_changed += n->learn_skip_changed;
	pbd.n.learn_skip_failed += n->learn_skip_failed;
}

static void add_report(const struct report *r)
{
	if (r->learn) {
		add_learn_report(&r->n);
		if (r->relearn) {
			meta_moved(r->was_dev, r->was_ino, &r->exe);
			learn_allow(&r->exe, r->rec_flags);
		}
		return;
	}
	pbd.n.meta_read += r->meta > 0;
	pbd.n.meta_stale += r->meta < 0;
	pbd.n.meta_bytes += r->meta_bytes;
	if (r->has_record)
		learn_allow(&r->exe, r->rec_flags);
	if (r->meta_only)	/* the exec's pages were the kernel's: counted there */
		return;
	pbd.n.skip_budget += r->p.skip_budget;
	if (!r->data) {
		pbd.n.skip_gone += r->gone;
	} else if (r->result) {	/* read nothing: not "recent" either */
		pbd.n.data_skip_gone += r->gone;
		pbd.n.skip_denied += r->p.skip_denied;
		pbd.n.skip_failed += r->result == PB_FAIL && !r->p.skip_budget;
		forget_read(r->exe.st_dev, r->exe.st_ino);
	}
	if (r->result) {
		if (!r->data && !r->p.skip_budget) {
			pbd.n.skip_mismatch += r->result == PB_NONE;
			pbd.n.skip_failed += r->result != PB_NONE;
		}
		return;
	}
	if (r->data) {
		pbd.n.data_prefetched++;
		pbd.n.data_after_exec += r->after_exec;
	} else {
		pbd.n.prefetched++;
		pbd.n.plans += r->p.plan;
		/* a script's and a refused record's pages: not the program's to leave */
		pbd.n.program_to_kernel += r->has_record && r->p.exe_to_kernel;
		pbd.n.libraries_to_kernel += r->p.libs_left;
		pbd.n.plans_to_kernel += r->p.plan_left;
		pbd.n.data_to_kernel += r->p.data_left;
	}
	pbd.n.files += r->p.files;
	pbd.n.extents += r->p.extents;
	pbd.n.bytes += r->p.bytes;
	pbd.n.cached_bytes += r->p.cached_bytes;
	pbd.n.skip_mismatch += r->p.skip_mismatch;
	pbd.n.skip_fs += r->p.skip_fs;
	pbd.n.skip_denied += r->p.skip_denied;	/* a data file read: 0 */
}

/* The counters, in the order `pbitmap status` explains them. */
#define COUNTER(name) { #name, offsetof(struct counters, name) }
static const struct { const char *name; size_t offset; } counter_names[] = {
	COUNTER(execs), COUNTER(unstamped), COUNTER(prefetched), COUNTER(plans),
	COUNTER(opens), COUNTER(data_prefetched), COUNTER(data_after_exec), COUNTER(data_skip_gone),
	COUNTER(queue_overflows),
	COUNTER(own_opens),
	COUNTER(skip_handle),
	COUNTER(program_to_kernel), COUNTER(libraries_to_kernel), COUNTER(plans_to_kernel),
	COUNTER(data_to_kernel),
	COUNTER(files),
	COUNTER(extents),
	COUNTER(bytes), COUNTER(cached_bytes), COUNTER(skip_kernel), COUNTER(skip_recent), COUNTER(skip_busy),
	COUNTER(skip_pressure), COUNTER(skip_gone), COUNTER(skip_mismatch), COUNTER(skip_fs),
	COUNTER(skip_denied), COUNTER(skip_budget), COUNTER(skip_failed), COUNTER(killed_stopped),
	COUNTER(held), COUNTER(held_timeout),
	COUNTER(exec_cpu_us), COUNTER(open_cpu_us), COUNTER(child_cpu_us), COUNTER(child_sys_us),
	COUNTER(learners), COUNTER(learn_written), COUNTER(learn_in_place), COUNTER(learn_pages),
	COUNTER(learn_plans), COUNTER(learn_skip_plan), COUNTER(learn_skip_recent),
	COUNTER(learn_skip_policy), COUNTER(learn_skip_changed), COUNTER(learn_skip_failed),
	COUNTER(learn_skip_switched), COUNTER(learn_lost), COUNTER(learn_faults),
	COUNTER(learn_events_lost), COUNTER(learn_window_ended), COUNTER(learn_skip_partial),
	COUNTER(meta_learned), COUNTER(meta_read), COUNTER(meta_stale), COUNTER(meta_bytes),
};

/* The reaped children's CPU, and in *@sys_us its part in the kernel: 0 when unknown */
static uint64_t children_cpu_us(uint64_t *sys_us)
{
	struct rusage ru;

	if (getrusage(RUSAGE_CHILDREN, &ru))
		return 0;
	*sys_us = (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec;
	return (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec + *sys_us;
}

/*
 * The counters, replaced whole: a reader never sees half of them.  Root's
 * only (other users' execs are not theirs to count).
 */
static void write_status(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	uint64_t child_sys_us = 0, child_us = children_cpu_us(&child_sys_us);

	if (!fp)
		return;
	if (child_us) {	/* 0: getrusage failed, or no child has ended yet */
		pbd.n.child_cpu_us = child_us;
		pbd.n.child_sys_us = child_sys_us;
	}
	fprintf(fp, "pid %d\npending %u\nlearning %d\nfault_around %d\n", (int)getpid(),
		pbd.children, pbd.learning, pbd.fault_around);
	for (size_t i = 0; i < sizeof(counter_names) / sizeof(counter_names[0]); i++) {
		uint64_t v;

		memcpy(&v, (const char *)&pbd.n + counter_names[i].offset, sizeof(v));
		fprintf(fp, "%s %" PRIu64 "\n", counter_names[i].name, v);
	}
	if (!fclose(fp))
		pb_write_small_file(pbd.status_path, buf, len, 0600, PB_SMALL_FIXED_TMP);
	free(buf);
}

/*
 * Reap children and read their reports: whether there were any.  When a
 * child ended, every event queued by then is read (execs first, as in
 * serve(); at most READ_ROUNDS reads of each group) before the ended
 * children leave the table: a child's opens are queued before it exits,
 * and known as its own (handle_open()) only while it is there, however
 * short its life.
 */
static bool reap(int report_fd, int fan, int fan_open, int report_wfd)
{
	struct report r;
	bool any = false, ended = false;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
		/*
		 * Its user stopped it (a child runs with the user's
		 * credentials once it has them, and a stopped process gets
		 * no SIGALRM): it would hold its slot, and a writer's, until
		 * its deadline.  Killed at once; reaped as killed below.
		 */
		if (WIFSTOPPED(status)) {
			kill(pid, SIGKILL);
			pbd.n.killed_stopped++;
			continue;
		}
		kid_ended(pid);
		ended = true;
		hold_reaped(pbd.own_fds[0], pid);
		/*
		 * killed: its alarm, CPU limit, or kill_kids_before(); a
		 * writer that exited with 1 sent no report (its chroot or
		 * its credentials refused): failed, not silently lost
		 */
		if (!learn_reaped(pid, WIFSIGNALED(status) || WEXITSTATUS(status)) &&
		    WIFSIGNALED(status))
			pbd.n.skip_failed++;
	}
	/*
	 * Forgotten only once the open queue has been read to its end: on a
	 * busy host (a kernel build beside it) more than READ_ROUNDS buffers
	 * may be queued, and an ended child's open read after it was
	 * forgotten started a data child as a stranger's, or was counted as
	 * a gone opener's (t-daemon-plan beside 4 loops of cat: 10 of its
	 * exec children's 17 opens, data_skip_gone 1; t-daemon-own-backlog).
	 */
	if (ended || kids_any_ended()) {
		read_queued(fan, report_wfd, handle_event, &pbd.n.exec_cpu_us);
		if (read_queued(fan_open, report_wfd, handle_open, &pbd.n.open_cpu_us))
			kids_forget_ended();
	}
	while (read(report_fd, &r, sizeof(r)) == sizeof(r)) {
		add_report(&r);
		any = true;
	}
	return any;
}

/*
 * Reap children and read their reports until none is at work or @ms have
 * passed: whether a SIGTERM or SIGINT came meanwhile (when @signal_ends,
 * it ends the wait).
 */
static bool await_children(int sfd, int report_fd, uint64_t ms, bool signal_ends)
{
	uint64_t deadline = now_ms() + ms, now;
	struct pollfd pfd[2] = { { sfd, POLLIN, 0 }, { report_fd, POLLIN, 0 } };
	struct signalfd_siginfo si;
	bool signalled = false;

	while (pbd.children && !(signal_ends && signalled) && (now = now_ms()) < deadline) {
		poll(pfd, 2, (int)(deadline - now));
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			signalled |= si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT;
		reap(report_fd, -1, -1, -1);
	}
	return signalled;
}

/*
 * Stopping (SIGTERM, SIGINT): the children at work are given STOP_WAIT_MS
 * to end and report (a second signal ends the wait).  Without the wait
 * they died with the daemon (PR_SET_PDEATHSIG): a learned write was lost,
 * and so were a reader's counts in the status file.  Both groups are
 * closed first, so that no exec waits on a daemon that takes no event:
 * the kernel lets through what was queued for it, and held execs are let
 * through before.  A child still at work at the bound is killed as before,
 * and reaped to be counted as failed (reap(); one in uninterruptible
 * sleep, 2 s at most).
 */
static void stop(int fan, int fan_open, int sfd, int report_fd)
{
	hold_tick(fan, true);
	close(fan);
	if (fan_open >= 0)
		close(fan_open);
	pbd.own_fds[0] = pbd.own_fds[1] = -1;
	fault_around_on();
	if (pbd.children)
		pb_note(NULL, "stopping: waiting at most %d s for %u children at work",
			STOP_WAIT_MS / 1000, pbd.children);
	await_children(sfd, report_fd, STOP_WAIT_MS, true);
	if (pbd.children) {
		pb_note(NULL, "stopping: %u children killed", pbd.children);
		kill_kids_before(UINT64_MAX);
		await_children(sfd, report_fd, 2000, false);
	}
	write_status();
}

/* Events seen: when it moved, the status file is due within a second. */
static uint64_t events_seen(void)
{
	return pbd.n.execs + pbd.n.opens + pbd.n.learners +
	       pbd.n.learn_skip_switched + pbd.n.learn_faults;
}

/*
 * Handle events until SIGTERM or SIGINT: 0, or PB_FAIL.  Execs first: an
 * exec is an open too, and its plan must not be pre-empted by the open.
 */
static int serve(int fan, int fan_open, int mounts)
{
	int pipefd[2], sfd, learn_fd = -1;
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) ||
	    (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 ||
	    pipe2(pipefd, O_CLOEXEC | O_NONBLOCK))
		return pb_error_errno(NULL, "cannot set up signals");
	pbd.own_fds[0] = fan;
	pbd.own_fds[1] = fan_open;
	pbd.own_fds[2] = sfd;
	pbd.own_fds[3] = pipefd[0];
	if (pbd.cfg.learn != PBD_LEARN_NO) {
		/* =off: before the first run can be followed (learn.c: precise) */
		if (pbd.cfg.learn_fault_around == PBD_FA_OFF)
			fault_around_off();
		learn_fd = learn_start(pipefd[1]);
		pbd.learning = learn_fd >= 0 ? 1 : 2;
		if (learn_fd < 0)
			fault_around_on();
	}
	write_status();
	/*
	 * The status file is rewritten when a read-ahead starts or ends, and
	 * otherwise (unstamped execs and opens) at most once a second: an
	 * unstamped file costs the daemon one read of its event and one
	 * attribute look-up, not a file written.
	 */
	for (uint64_t written = now_ms(), seen = events_seen();;) {
		struct pollfd pfd[6] = { { fan, POLLIN, 0 }, { fan_open, POLLIN, 0 },
					 { sfd, POLLIN, 0 }, { pipefd[0], POLLIN, 0 },
					 { learn_fd, POLLIN, 0 }, { mounts, POLLPRI, 0 } };
		unsigned int children = pbd.children;
		struct signalfd_siginfo si;
		int timeout = learn_pending() ? 200 :
			      seen != events_seen() || pbd.children ? 1000 : -1;
		int hold_ms = hold_timeout_ms();

		if (hold_ms >= 0 && (timeout < 0 || hold_ms < timeout))
			timeout = hold_ms;

		if (poll(pfd, 6, timeout) < 0 && errno != EINTR) {
			hold_tick(fan, true);
			fault_around_on();
			return pb_error_errno(NULL, "poll");
		}
		kill_kids_before(now_ms());
		hold_tick(fan, false);
		/* first: a learner's faults fill the ring buffer fastest */
		if (pfd[4].revents & POLLIN)
			learn_events();
		learn_tick();
		if (pfd[0].revents & POLLIN)
			read_events(fan, pipefd[1], handle_event, &pbd.n.exec_cpu_us);
		if (pfd[1].revents & POLLIN)
			read_events(fan_open, pipefd[1], handle_open, &pbd.n.open_cpu_us);
		if (pfd[5].revents & (POLLPRI | POLLERR))
			mark_local(fan, fan_open);	/* mounted or unmounted since */
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
				stop(fan, fan_open, sfd, pipefd[0]);
				return 0;
			}
			if (si.ssi_signo == SIGHUP)
				mark_local(fan, fan_open);	/* filesystems mounted since */
		}
		if (reap(pipefd[0], fan, fan_open, pipefd[1]) || children != pbd.children ||
		    (seen != events_seen() && now_ms() - written >= 1000)) {
			write_status();
			written = now_ms();
			seen = events_seen();
		}
	}
}

/*
 * Whether the daemon can open files by handle: a handle of the root made
 * and opened again.  Without CONFIG_FHANDLE, fanotify still reports file
 * handles, and each open event would cost an open_by_handle_at() that
 * fails with ENOSYS: a data file's open was never looked at, and nothing
 * said so (the test bed's kernel, until its config had the option).  A
 * seccomp or LSM policy that refuses the call (EPERM) does the same.  Any
 * other failure is the root filesystem's (no handles there, EOPNOTSUPP):
 * others may have them, and are watched.
 */
static bool file_handles(void)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[MAX_HANDLE_SZ];
	} h = { .fh.handle_bytes = MAX_HANDLE_SZ };
	int mount_id, root, fd;

	if (name_to_handle_at(AT_FDCWD, "/", &h.fh, &mount_id, 0))
		return errno != ENOSYS && errno != EPERM;
	root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return true;	/* not the handles' failure: the events will say */
	fd = open_by_handle_at(root, &h.fh, O_PATH | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	close(root);
	return fd >= 0 || (errno != ENOSYS && errno != EPERM);
}

static int start(void)
{
	struct rlimit nofile;
	char dir[PATH_MAX], *slash;
	int fan, fan_open, mounts;

	snprintf(dir, sizeof(dir), "%s", pbd.status_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return pb_error_errno(dir, "cannot create");
	}
	/* holding execs (hold.c): permission events, a group of the content class */
	fan = fanotify_init((pbd.cfg.hold_exec_ms ? FAN_CLASS_CONTENT : FAN_CLASS_NOTIF) |
			    FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_PIDFD,
			    O_RDONLY | O_LARGEFILE | O_CLOEXEC | O_NOATIME);
	if (fan < 0)
		return pb_error_errno(NULL, errno != EINVAL ?
				      "fanotify_init (pbitmapd must run as root)" :
				      pbd.cfg.hold_exec_ms ? "fanotify with pidfds and permission "
				      "events (PBITMAP_DAEMON_HOLD_EXEC_MS) needs Linux 5.15 or later, "
				      "built with CONFIG_FANOTIFY_ACCESS_PERMISSIONS" :
				      "fanotify with pidfds needs Linux 5.15 or later");
	/* opens by file handle: the kernel opens nothing for this group */
	fan_open = -1;
	if (!file_handles())
		pb_error_errno(NULL, "cannot open files by handle (open_by_handle_at(2): "
			       "a kernel without CONFIG_FHANDLE, or a policy refusing it): "
			       "data files are not read ahead");
	else if ((fan_open = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK |
					   FAN_REPORT_FID | FAN_REPORT_PIDFD,
					   O_RDONLY | O_LARGEFILE | O_CLOEXEC)) < 0)
		pb_error_errno(NULL, "fanotify_init (FAN_REPORT_FID, FAN_REPORT_PIDFD): "
			       "data files are not read ahead");
	/*
	 * The mount table, polled (POLLPRI: it changed since this open): a
	 * filesystem mounted while the daemon runs (a USB disk, a /home
	 * mounted late, a btrfs subvolume) is watched as it is mounted, not
	 * at the next SIGHUP.  Opened before the first look at it, so that a
	 * mount made in between is not missed.  Not fatal: SIGHUP does the
	 * same.
	 */
	mounts = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (mark_local(fan, fan_open))
		return PB_FAIL;
	/*
	 * Its own code stays in memory: a daemon whose pages were reclaimed
	 * would fault them back in from the disk it is trying to help, at
	 * the moment a program starts.  A 2 MiB static binary; not fatal.
	 */
	/*
	 * A permission event whose descriptor the daemon cannot be given is
	 * denied by the kernel: the exec would fail.  Every descriptor the
	 * hard limit allows (a read returns up to 8 KiB of events, each with
	 * a file and a pidfd, besides the held ones and the learners').
	 */
	if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	if (mlockall(MCL_CURRENT) && pb_verbose)
		pb_note(NULL, "cannot lock its pages in memory (mlockall): %s", strerror(errno));
	meta_start();
	pbd.kernel_fd = open("/proc/sys/vm/pbitmap_enabled", O_RDONLY | O_CLOEXEC);
	pbd.kernel_learn_fd = open("/proc/sys/vm/pbitmap_learn", O_RDONLY | O_CLOEXEC);
	return serve(fan, fan_open, mounts);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "status", required_argument, NULL, 's' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "check-enabled", no_argument, NULL, 'E' },
		{ "print-config", no_argument, NULL, 'P' },
		{ "restore-fault-around", no_argument, NULL, 'R' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = DEFAULT_CONFIG;
	bool check = false, print = false, restore = false;
	int c;

	/*
	 * Line-buffered stderr: a message goes out in one write() at its
	 * newline.  Unbuffered, each part of it was a write of its own, and
	 * children logging at once cut their lines into each other's
	 * ("pbitmapd: A: pbitmapd: B: pid ...").  Nothing is left in the
	 * buffer at a fork: every message ends in a newline.
	 */
	setvbuf(stderr, NULL, _IOLBF, 4096);
	pb_progname = "pbitmapd";
	pbd.status_path = PB_DAEMON_STATUS;
	pbd.state_dir = PB_DAEMON_STATE;
	while ((c = pb_getopt(argc, argv, "c:s:S:", longopts)) != -1) {
		if (c == 'c')
			config = optarg;
		else if (c == 's')
			pbd.status_path = optarg;
		else if (c == 'S')
			pbd.state_dir = optarg;
		else if (c == 'E')
			check = true;
		else if (c == 'P')
			print = true;
		else if (c == 'R')
			restore = true;
		else if (c == 'V')
			return printf("pbitmapd %s\n", PBITMAP_VERSION_STRING) < 0;
		else
			return pb_option_exit(c);
	}
	if (optind < argc)
		return pb_usage_error("unexpected argument '%s'", argv[optind]);
	if (check + print + restore > 1)
		return pb_usage_error("--check-enabled, --print-config and --restore-fault-around "
				      "exclude each other");
	/* a daemon killed with -9 changed it: the unit's ExecStopPost */
	if (restore)
		return fault_around_restore() ? PB_EXIT_FAIL : PB_EXIT_OK;
	if (config_load(config))
		return check ? 255 : PB_EXIT_FAIL;	/* ExecCondition: 255 fails the unit */
	if (check)
		return pbd.cfg.enabled ? PB_EXIT_OK : PB_EXIT_FAIL;
	if (print) {
		config_measured_gap();
		return config_print() ? PB_EXIT_FAIL : PB_EXIT_OK;
	}
	if (!pbd.cfg.enabled) {
		pb_note(config, "PBITMAP_DAEMON=yes is not set: nothing to do");
		return PB_EXIT_OK;
	}
	config_measured_gap();
	pb_willneed_set_skip_cached(pbd.cfg.skip_cached);
	pb_note(NULL, "join gap %" PRIu64 " KiB (%s)", pbd.cfg.gap >> 10, config_gap_source());
	if (pbd.cfg.metadata && !meta_readable())
		pb_note(NULL, "metadata lists not read: a join gap under 256 KiB"
			" (PBITMAP_DAEMON_METADATA=auto)");
	fault_around_restore();		/* a killed predecessor's */
	return start() ? PB_EXIT_FAIL : PB_EXIT_OK;
}
