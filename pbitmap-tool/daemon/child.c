// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The work of one stamped exec, or one stamped data file's open, in a child
 * process: what it takes of the task, the limits it runs under, the reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "pbitmapd.h"

/*
 * The real user, real group and groups of @pid (as this process's
 * namespace sees them), and, when @cap_eff is not NULL, its effective
 * capabilities (0 when not given).  Real, not effective: the process may
 * be past another exec by now, of a set-user-ID program whose effective
 * user would read what the user who started it may not.
 */
int task_creds(pid_t pid, uid_t *uid, gid_t *gid, gid_t *groups, int max, int *nr,
	       uint64_t *cap_eff)
{
	char path[64], *buf = NULL, *p, *end;
	unsigned int u[4], g[4];
	size_t cap = 0;
	bool overflow = false;	/* fewer groups could widen access (deny ACLs): none */
	int found = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return -1;
	*nr = 0;
	if (cap_eff)
		*cap_eff = 0;
	while (getline(&buf, &cap, fp) > 0) {
		unsigned long long eff;

		if (sscanf(buf, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4) {
			*uid = u[0];
			found |= 1;
		} else if (sscanf(buf, "Gid: %u %u %u %u", &g[0], &g[1], &g[2], &g[3]) == 4) {
			*gid = g[0];
			found |= 2;
		} else if (!strncmp(buf, "Groups:", 7)) {
			for (p = buf + 7;; p = end) {
				unsigned long v = strtoul(p, &end, 10);

				if (end == p)
					break;
				if (*nr == max) {	/* more than the caller takes */
					overflow = true;
					break;
				}
				groups[(*nr)++] = (gid_t)v;
			}
			found |= 4;
		} else if (cap_eff && sscanf(buf, "CapEff: %llx", &eff) == 1) {
			*cap_eff = eff;
		}
	}
	free(buf);
	fclose(fp);
	return found == 7 && !overflow ? 0 : -1;
}

/*
 * @path (as this process names files) as a task whose root is @root names
 * it: @path less @root, unless @root is "/"; NULL when it lies outside.
 */
const char *under_root(const char *root, const char *path)
{
	size_t len = strcmp(root, "/") ? strlen(root) : 0;

	if (*path != '/' || (len && (strncmp(path, root, len) || path[len] != '/')))
		return NULL;
	return path + len;
}

/*
 * The exec'd file's path as the task sees it, in @out: the path of @fd
 * here, under the task's root (/proc/PID/root).
 */
int task_path(pid_t pid, int fd, char *out, size_t size)
{
	char link[64], here[PATH_MAX], root[PATH_MAX];
	const char *rel;
	ssize_t n, r;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, here, sizeof(here) - 1);
	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	r = readlink(link, root, sizeof(root) - 1);
	if (n <= 0 || r <= 0)
		return -1;
	here[n] = root[r] = '\0';
	rel = under_root(root, here);	/* NULL: exec'd through a descriptor from outside */
	if (!rel || strlen(rel) >= size)
		return -1;
	strcpy(out, rel);
	return 0;
}

/* What the child takes of the exec'ing task before it reads anything. */
struct task {
	int root;		/* O_PATH descriptor of its root directory */
	uid_t uid;		/* its filesystem user and groups */
	gid_t gid;
	int nr_groups;
	gid_t groups[NGROUPS_MAX];
	char exe[PATH_MAX];	/* the file exec'd, as the task names it */
	unsigned char marker[sizeof(struct pbitmap_marker)];	/* its user.pbitmap, or zeros */
};

/*
 * The 32-byte user.pbitmap of the exec'd file @exe_fd into @marker, read
 * with the daemon's privileges (its user may run a program they may not
 * read); zeros when it holds no marker.  Whether it holds one.
 */
static bool exe_marker(int exe_fd, unsigned char marker[sizeof(struct pbitmap_marker)])
{
	if (fgetxattr(exe_fd, PBITMAP_XATTR_NAME, marker, sizeof(struct pbitmap_marker)) ==
	    sizeof(struct pbitmap_marker))
		return true;
	memset(marker, 0, sizeof(struct pbitmap_marker));
	return false;
}

/*
 * Take @pid's root, credentials and name of the exec'd file: /proc reads
 * only, no disk, so that a short-lived program is still there.  0, or
 * PB_NONE when it is gone.
 */
static int take_task(pid_t pid, int pidfd, int exe_fd, struct task *t)
{
	char path[64];

	exe_marker(exe_fd, t->marker);
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	t->root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->root < 0 ||
	    task_creds(pid, &t->uid, &t->gid, t->groups, NGROUPS_MAX, &t->nr_groups, NULL) ||
	    task_path(pid, exe_fd, t->exe, sizeof(t->exe)))
		return PB_NONE;
	/*
	 * Still the process of the event, not another one with its PID: no
	 * pidfd means it had exited when the event was read (FAN_EPIDFD).
	 */
	if (pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0))
		return PB_NONE;
	return 0;
}

/*
 * No capability left but @keep (a mask of the first 32: CAP_DAC_OVERRIDE
 * at most, for a root learner's write), whatever the user (root's
 * included: a container's root must not read with the daemon's
 * DAC_READ_SEARCH), and the parent's death still kills us (a change of
 * credentials clears PDEATHSIG).  Not dumpable, whatever fs.suid_dumpable
 * says: the user must not ptrace a child holding descriptors root opened
 * (an execute-only program, the task's pidfd).  setresuid() makes the
 * process dumpable as fs.suid_dumpable says; until it is made not
 * dumpable again, it keeps root's permitted capabilities
 * (PR_SET_KEEPCAPS), which the user's ptrace would need: there is no
 * moment the user can attach.  Dropping capabilities after does not make
 * it dumpable again.
 */
int drop_privileges(uid_t uid, gid_t gid, const gid_t *groups, int nr, uint32_t keep)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2] = { { keep, keep, 0 }, { 0, 0, 0 } };

	if (setgroups((size_t)nr, groups) || setresgid(gid, gid, gid) ||
	    prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setresuid(uid, uid, uid) ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) || syscall(SYS_capset, &hdr, caps) ||
	    prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_PDEATHSIG, SIGKILL))
		return PB_FAIL;
	return 0;
}

/* User nobody, no capability: who decodes what anybody can label. */
static int become_nobody(void)
{
	return drop_privileges(65534, 65534, NULL, 0, 0);
}

/*
 * Become the exec'ing task, as far as reading files goes: its root, its
 * real user and groups, no capability.  0 or PB_FAIL.  The security
 * modules still see the daemon's own label, not the task's.
 */
static int enter_task(const struct task *t)
{
	if (fchdir(t->root) || chroot(".") || chdir("/") ||
	    drop_privileges(t->uid, t->gid, t->groups, t->nr_groups, 0))
		return PB_FAIL;
	close(t->root);
	return 0;
}

/* Send @r to the daemon and end. */
void __attribute__((noreturn)) child_report(int report_fd, const struct report *r)
{
	if (write(report_fd, r, sizeof(*r)) != sizeof(*r))
		_exit(1);
	_exit(0);
}

/*
 * Limits, so that a crafted record or plan costs bounded work; no
 * descriptor but standard input, output and error and @keep (none of the
 * daemon's: a filesystem's root or a learner's is a way out of a chroot,
 * and a BPF map or another event's file is nothing a child needs); signals
 * as for any process (the parent blocks them).
 */
void child_limits(const int *keep, size_t nr_keep, unsigned int seconds, unsigned int cpu_s)
{
	struct rlimit cpu = { cpu_s, cpu_s };
	unsigned int from = 3;
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (;;) {	/* close [from, next kept) */
		unsigned int next = ~0u;

		for (size_t i = 0; i < nr_keep; i++)
			if (keep[i] >= (int)from && (unsigned int)keep[i] < next)
				next = (unsigned int)keep[i];
		if (next > from && close_range(from, next - 1, 0))
			_exit(1);	/* a descriptor that stays open: better none of the work */
		if (next == ~0u)
			break;
		from = next + 1;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(seconds);
	setrlimit(RLIMIT_CPU, &cpu);
#if !defined(__SANITIZE_ADDRESS__)
	{	/* a crafted ELF file must not make libelf take gigabytes */
		struct rlimit data = { 512 << 20, 512 << 20 };

		setrlimit(RLIMIT_DATA, &data);
	}
#endif
	/* best effort, level 4: the class of the program whose start it serves */
	syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, (2 << 13) | 4);
}

/*
 * The program's marked pages, from its record @rec, within what is left of
 * the budget: first, or after its plan when the plan was to read them and
 * did not (exec_child()).
 */
static void exe_pages(int fd, const struct pb_record *rec, struct pb_exec_prefetch *p)
{
	uint64_t extents, bytes, cached;

	/* spent (only after a plan, which counted what it left out): 0 is no limit */
	if (p->budget && p->bytes >= p->budget)
		return;
	if (pb_willneed(fd, rec, le64toh(pb_hdr(rec)->content_size), p->gap,
			p->budget ? p->budget - p->bytes : 0, &extents, &bytes, &cached))
		return;
	p->files++;
	p->extents += extents;
	p->bytes += bytes;
	p->cached_bytes += cached;
}

/*
 * The program's record, found through its @marker (read as root: one
 * read, no ELF parsing on a start-up's critical path), and its own pages,
 * first, unless a plan the exec follows lists the program: that plan
 * reads them in their place in its order (read first as well, they would
 * be read twice, and ahead of pages the start-up needs before them).
 * Called as the exec'ing user, or nobody: a record is for its file's
 * owner to craft, and is not decoded with the daemon's privileges.  0, or
 * PB_NONE for a record the kernel would refuse too.
 */
static int exe_record(int fd, const struct stat *st, const unsigned char *marker, bool gone,
		      struct pb_record *rec, struct pb_exec_prefetch *p)
{
	if (pb_marker_record_at(fd, st, marker, sizeof(struct pbitmap_marker), rec))
		return PB_NONE;
	if (!gone && !p->plan_to_kernel)	/* gone, or left: no plan followed */
		p->exe_entry = pb_exec_plan_entry(rec, fd);
	if (p->exe_entry < 0 && !p->exe_to_kernel)
		exe_pages(fd, rec, p);
	return 0;
}

/*
 * What a READ_* @setting leaves to the kernel (pb_leaves() judges a device
 * by it): auto (the default but _READ_PLAN's) leaves what is on a device
 * whose read-ahead window is at least its largest request, unless the
 * exec is @held.  For a program's pages (PBITMAP_DAEMON_READ_PROGRAM,
 * _READ_LIBRARIES, _READ_PLAN: leave_to_kernel(), on the program's device):
 *
 * The program itself is faulting its file by the time its exec is heard
 * of, and on such a device its faults read the file in requests as large
 * as ours (7.3 reads an executable's mapping from the fault to its end,
 * up to the window), so a second reader only splits them: on Debian's
 * 7.3, whose virtio disk has an 8 MiB window, python3's start-up made
 * 129.5 read requests with the daemon reading its executable against
 * 80.5 without the daemon, and 93.5 (against 87) when it left the
 * executable to the kernel, in 0.57 s against 0.67
 * (docs/bench/2026-12-01-daemon-fsid-program.md).
 *
 * Its libraries (read without a plan only: a plan names its files, and
 * its batch goes out before ld.so needs them) are judged by the
 * program's device: the child decides before it knows them, and reads
 * nothing to find them when it leaves them.  ld.so has not opened them
 * when the exec is heard of, but the child reaches each only after
 * reading its headers and record, as ld.so reads the same headers, and
 * its ranges went out beside the faults' large requests.  Measured with
 * bitmaps of exactly the pages start-up touches, 6 to 8 runs: gdb 355
 * read requests against 293 without the daemon on Debian's 7.3 (+0.27 s,
 * not shown under TCG: p 0.13), python3 88 against 75; on a native 6.18
 * with a 2.5 MiB window, gdb +0.22 s and emacs +0.11 s (p 0.0003 and
 * 0.025), python3 level (docs/bench/2026-12-04-host-native.md,
 * 2026-12-04-libraries-to-kernel.md).  Reading each library's pages
 * before its headers made it worse, not better (gdb +0.70 s on 7.3,
 * +0.45 s natively).
 *
 * A plan's files (_READ_PLAN) are read by default, wide window or not: a
 * plan's batch goes out before ld.so needs its files, and on 7.3 leaving
 * them made gdb's and emacs's start-ups slower (1.98 s against 1.55,
 * 2.25 against 1.53; 272 and 360 requests against 203 and 237), and
 * python3's faster in one boot (0.47 s against 0.65), level in another
 * (docs/bench/2026-12-04-plan-left-to-the-kernel.md).
 *
 * Stamped data files have a rule of their own (data_rule()).
 *
 * A held exec (PBITMAP_DAEMON_HOLD_EXEC_MS) faults nothing until its
 * reads are submitted: its program, libraries and plan are read.
 */
static enum pb_leave read_rule(enum pbd_read setting, bool held)
{
	if (setting != PBD_READ_AUTO)
		return setting == PBD_READ_NO ? PB_LEAVE_ALWAYS : PB_LEAVE_NEVER;
	return held ? PB_LEAVE_NEVER : PB_LEAVE_WIDE;
}

static bool leave_to_kernel(enum pbd_read setting, dev_t dev, bool held)
{
	return pb_leaves(read_rule(setting, held), dev);
}

/*
 * Which stamped data files to leave to the kernel (PBITMAP_DAEMON_READ_DATA),
 * at their open and in a plan, each judged on its own device
 * (pb_leaves()): read_rule()'s, but auto leaves none unless a request
 * costs as much as reading DATA_LEFT_MIN_GAP more (the join gap, as
 * pbitmap-device-gap.service measures it).
 *
 * On Debian's 7.3 (8 MiB window), the benchmark's git pack, mapped: at 150
 * requests a second (gap measured 1024 KiB) left 0.630 s, read 0.875, no
 * daemon 0.610 (20 runs); with 4 ms a request and no limit on requests
 * (no gap measured: 256 KiB) read 0.345 s, left 0.885, no daemon 0.925;
 * on a disk charging bytes (gap 28 KiB) read 37.45 s, left 37.99, no
 * daemon 37.69 (10 runs; docs/bench/2026-12-07-data-to-kernel-7.3.md).
 */
#define DATA_LEFT_MIN_GAP	(1024 << 10)
enum pb_leave data_rule(bool held)
{
	if (pbd.cfg.read_data == PBD_READ_AUTO && pbd.cfg.gap < DATA_LEFT_MIN_GAP)
		return PB_LEAVE_NEVER;
	return read_rule(pbd.cfg.read_data, held);
}

/*
 * The filesystem identity @uid, @gid and @groups (of @nr), with no
 * capability in effect but CAP_SETUID and CAP_SETGID, kept for the drop
 * to nobody that decodes a record (xattr_pages()).  0 or PB_FAIL.
 */
static int read_as(uid_t uid, gid_t gid, const gid_t *groups, int nr)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2];

	if (syscall(SYS_capget, &hdr, caps))
		return PB_FAIL;
	caps[0].effective = (1u << CAP_SETUID) | (1u << CAP_SETGID);
	caps[1].effective = 0;
	if (syscall(SYS_capset, &hdr, caps) || setgroups((size_t)nr, groups))
		return PB_FAIL;
	setfsgid(gid);
	setfsuid(uid);
	/* they return the old value: the new one is checked by asking again */
	return (gid_t)setfsgid((gid_t)-1) == gid && (uid_t)setfsuid((uid_t)-1) == uid ? 0 : PB_FAIL;
}

/*
 * A record kept in user.pbitmap, as a data file keeps it (a data file at
 * its open, a script exec'd): its marked pages.  The value is read with
 * the caller's identity (read_as(): a script's user, a data file's
 * opener) and
 * decoded (zstd, the record's checks) as nobody, with no capability: a
 * file anybody can label is not parsed with anybody else's rights.  0, or
 * PB_NONE when it holds no valid record.
 */
int xattr_pages(int fd, struct pb_exec_prefetch *p)
{
	static unsigned char value[65536];	/* the largest attribute value */
	uint64_t content, extents, bytes, cached;
	struct pb_record r = { 0 };
	struct stat st;
	ssize_t n = fgetxattr(fd, PBITMAP_XATTR_NAME, value, sizeof(value));

	if (n <= 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    become_nobody() || pb_xattr_decode(value, (size_t)n, &r))
		return PB_NONE;
	content = le64toh(pb_hdr(&r)->content_size);
	if (content > (uint64_t)st.st_size)
		content = (uint64_t)st.st_size;
	if (!pb_willneed(fd, &r, content, p->gap, p->budget, &extents, &bytes, &cached)) {
		p->files++;
		p->extents += extents;
		p->bytes += bytes;
		p->cached_bytes += cached;
	}
	pb_record_free(&r);
	return 0;
}

/*
 * On a patched kernel that prefetches: the metadata list only (the
 * kernel reads the program's pages and its plan at the exec, and its
 * plan's look-ups read these blocks one at a time), and the program's
 * record flags, for whose runs of it the list may be learned.
 */
static void __attribute__((noreturn)) meta_only_child(int exe_fd, int report_fd, struct report *r)
{
	unsigned char marker[sizeof(struct pbitmap_marker)];
	struct pb_record rec = { 0 };

	r->meta_only = true;
	if (!fstat(exe_fd, &r->exe)) {
		if (r->p.budget)	/* 0: memory.high reached (meta_read()'s 0 is no limit) */
			r->meta = meta_read(exe_fd, &r->exe, r->p.gap, r->p.budget,
					    &r->meta_bytes);
		/* the marker as root (an exec-only program), its record as nobody */
		if (exe_marker(exe_fd, marker) && !become_nobody() &&
		    !pb_marker_record_at(exe_fd, &r->exe, marker, sizeof(marker), &rec)) {
			r->has_record = true;
			r->rec_flags = le32toh(pb_hdr(&rec)->flags);
		}
	}
	child_report(report_fd, r);
}

/*
 * One stamped exec: the task taken (before any read, while it runs), its
 * metadata list read (meta.c; as root, before the task's identity is
 * taken), then, in its root and as its user (as nobody when it is gone),
 * the program's record decoded and its own pages read (they are needed
 * first), then its plan's files or its libraries (or neither:
 * leave_to_kernel()).  The pages left to a plan (exe_record()) that
 * then is not followed, or does not read them all, are read after it, as
 * the kernel reads them.  A held exec (hold.c) goes on when this child has
 * exited: all it reads is submitted by then.
 * @meta_only: the list only (meta_only_child()).
 */
void exec_child(int exe_fd, pid_t pid, int pidfd, int report_fd, bool meta_only)
{
	struct report r = { .p = { .gap = pbd.cfg.gap, .budget = exec_budget(pid),
				   .exe_entry = -1 } };
	struct pb_record rec = { 0 };
	static struct task t;
	bool held = pbd.cfg.hold_exec_ms, script = false;
	char data_left[64] = "";
	int keep[] = { exe_fd, pidfd, report_fd };
	struct stat st;
	int ret;

	child_limits(keep, 3, CHILD_SECONDS, (unsigned int)pbd.cfg.child_cpu_s);
	/* first: an exec left to the kernel (skip_kernel) is never counted as over budget */
	if (meta_only)
		meta_only_child(exe_fd, report_fd, &r);
	if (!r.p.budget) {	/* memory.high reached: nothing at all */
		r.p.skip_budget = 1;
		r.result = PB_FAIL;
		child_report(report_fd, &r);
	}
	r.gone = take_task(pid, pidfd, exe_fd, &t) == PB_NONE;
	ret = PB_FAIL;
	if (!fstat(exe_fd, &st)) {
		/* first: the start-up's look-ups come before its faults on most pages */
		r.meta = meta_read(exe_fd, &st, r.p.gap, r.p.budget, &r.meta_bytes);
		r.p.budget = r.p.budget > r.meta_bytes ? r.p.budget - r.meta_bytes : 1;
		r.p.exe_to_kernel = leave_to_kernel(pbd.cfg.read_program, st.st_dev, held);
		r.p.libs_to_kernel = leave_to_kernel(pbd.cfg.read_libraries, st.st_dev, held);
		r.p.plan_to_kernel = leave_to_kernel(pbd.cfg.read_plan, st.st_dev, held);
		r.p.data_to_kernel = data_rule(held);
		if (!pb_marker_is_one(t.marker, sizeof(t.marker))) {
			/*
			 * a script: its own pages, nothing more, its record read
			 * as its user (or nobody): an execute-only script's is not
			 */
			ret = r.gone ? read_as(65534, 65534, NULL, 0) :
				       read_as(t.uid, t.gid, t.groups, t.nr_groups);
			if (!ret)
				ret = xattr_pages(exe_fd, &r.p);
			script = !ret;
		} else {
			/* the task's user, or nobody: no record decoded as root */
			ret = r.gone ? become_nobody() : enter_task(&t);
		}
	}
	if (!ret && !script) {
		/*
		 * A record the kernel would refuse (a crafted plan, say): no
		 * pages of its own, as in the kernel, but the libraries'
		 * still (unless left to the kernel: no plan here).
		 */
		if (!exe_record(exe_fd, &st, t.marker, r.gone, &rec, &r.p)) {
			/* for the parent: whose runs of it may be learned */
			r.has_record = true;
			r.rec_flags = le32toh(pb_hdr(&rec)->flags);
			r.exe = st;
		}
		if (!r.gone) {
			pb_confine_local(pbd.walk_devs, pbd.nr_walk_devs);
			ret = pb_exec_rest(&rec, &st, t.exe, &r.p);
		}
	}
	if (r.p.exe_entry >= 0 && !r.p.exe_planned && !r.p.exe_to_kernel)
		exe_pages(exe_fd, &rec, &r.p);
	if (pb_verbose && r.gone)	/* no name in its root: the name here */
		task_path(getpid(), exe_fd, t.exe, sizeof(t.exe));
	if (r.p.data_left)
		snprintf(data_left, sizeof(data_left), ", %" PRIu64 " data files left to the kernel",
			 r.p.data_left);
	if (pb_verbose)
		pb_note(t.exe, "pid %d: %s, %" PRIu64 " files, %" PRIu64
			" extents, %" PRIu64 " bytes%s", (int)pid,
			ret ? "not read ahead" : script ? "a script: its own pages" :
			r.gone ? "gone; its own pages only" :
			r.p.plan_left ? "plan left to the kernel" :
			r.p.plan ? "plan" : r.p.libs_left ? "libraries left to the kernel" :
			"per-file bitmaps", r.p.files, r.p.extents, r.p.bytes, data_left);
	r.result = ret;
	child_report(report_fd, &r);
}


/*
 * Take the filesystem identity of the opener @pid of a data file
 * (read_as()): the opener may not be the file's owner, whose record it is
 * to craft.  An open event says nothing of the open's mode: a user may
 * open for writing only a file they may not read, and the daemon must not
 * read it for them.  @opener: a pidfd of @pid, still its process once its
 * identity is taken.  0, PB_NONE when it is gone, or PB_FAIL.
 */
static int as_opener(pid_t pid, int opener)
{
	static gid_t groups[NGROUPS_MAX];
	uid_t uid;
	gid_t gid;
	int nr;

	if (task_creds(pid, &uid, &gid, groups, NGROUPS_MAX, &nr, NULL) ||
	    syscall(SYS_pidfd_send_signal, opener, 0, NULL, 0))
		return PB_NONE;
	return read_as(uid, gid, groups, nr);
}

/*
 * A data file's marked pages, as the kernel reads them at its mmap: opened
 * and its attribute read as its opener (as_opener()), by the descriptor of
 * the very file it opened, looking nothing up by name; its record decoded
 * as nobody.  @opener: the opener's pidfd; @after: its exec's child's, or
 * -1.
 */
void data_child(int fd, pid_t pid, int opener, int after, int report_fd)
{
	struct report r = { .data = true, .p = { .gap = pbd.cfg.gap, .budget = exec_budget(pid) } };
	char self[64], name[PATH_MAX];
	int keep[] = { fd, report_fd, opener, after };
	struct pollfd exited = { after, POLLIN, 0 };
	ssize_t n;
	int rfd;

	child_limits(keep, after >= 0 ? 4 : 3, CHILD_SECONDS, (unsigned int)pbd.cfg.child_cpu_s);
	if (!r.p.budget) {
		r.p.skip_budget = 1;
		r.result = PB_FAIL;
		child_report(report_fd, &r);
	}
	if (fstat(fd, &r.exe))	/* for the parent: not "recent" if nothing is read */
		memset(&r.exe, 0, sizeof(r.exe));
	/* first: it may have exited by the time the exec's child has */
	r.result = as_opener(pid, opener);
	r.gone = r.result == PB_NONE;
	close(opener);
	if (r.result)
		child_report(report_fd, &r);
	/* after the opener's exec child (a pidfd, readable when it exits), at most 2 s */
	if (after >= 0) {
		poll(&exited, 1, DATA_AFTER_EXEC_MS);
		close(after);
		r.after_exec = true;
	}
	/* the same inode as checked, now for reading (its O_PATH descriptor) */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = pb_verbose ? readlink(self, name, sizeof(name) - 1) : -1;
	name[n > 0 ? n : 0] = '\0';
	rfd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	r.p.skip_denied = rfd < 0 && (errno == EACCES || errno == EPERM);
	r.result = rfd < 0 ? PB_NONE : xattr_pages(rfd, &r.p);
	if (pb_verbose)
		pb_note(n > 0 ? name : self, "opened by pid %d: %s, %" PRIu64 " extents, %"
			PRIu64 " bytes", (int)pid,
			r.p.skip_denied ? "data file its opener may not read" : "data file",
			r.p.extents, r.p.bytes);
	child_report(report_fd, &r);
}
