// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Observing a program for `pbitmap record` (learning in user space, for
 * kernels without the pbitmap patch): which pages of which files it read.
 * Writing that into the files is cmd-record.c's part; observe.h is the
 * interface between the two.
 *
 * CMD runs under ptrace, and so does everything it forks, clones or
 * executes.  What a process needed is read from its page tables whenever
 * file pages are about to leave them: at the entry of munmap, mremap,
 * mmap over a mapping, madvise(DONTNEED...) and execve (tracee.c says
 * which; a seccomp filter stops exactly those), and just before the
 * process goes away (PTRACE_EVENT_EXIT, while its mm is still intact).
 * /proc/PID/maps names every file mapping and /proc/PID/pagemap says which
 * of its pages are present.  A present page of a mapping at file offset
 * O means the file's page at O was read, by a fault or by fault-around;
 * where the kernel allows it (x86-64, Linux 6.7+), fault-around is turned
 * off in the tracee's file mappings (tracee.c), so a present page is one
 * the program touched.  A 32-bit (i386) program's system calls carry other
 * numbers: they are followed all the same (tracee.c translates them), but
 * its fault-around stays on.
 * The union over all processes, per file (identified by device and inode,
 * not by name), is what pb_observe() returns; cmd-record.c makes it the
 * newest generation of each file that carries a bitmap.  With --window, everything is sampled once, the window after the
 * first exec, and then left to run untraced.
 *
 * The tracer uses PTRACE_SEIZE rather than PTRACE_TRACEME: only a seized
 * tracee can be stopped with PTRACE_INTERRUPT (no signal the program could
 * observe), and group-stops are then reported as PTRACE_EVENT_STOP, which
 * tells them apart from signal-delivery-stops without guessing.  With
 * --window there is no seccomp filter (a filter outlives the tracer, and
 * without one its stops fail the system calls): every system call stops
 * while the window lasts.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/audit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pbitmap.h"
#include "observe.h"

/* /proc/PID/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT	(UINT64_C(1) << 63)
#define PM_SWAP		(UINT64_C(1) << 62)
/* Pagemap entries read per pread(): 32 KiB, 128 MiB of address space. */
#define PM_CHUNK	4096
/* How long stopping everything at the end of the window may take. */
#define STOP_ALL_TIMEOUT_NS	(500 * 1000000LL)
/* While the window timer has fired but was not yet acted on, it repeats
 * so that a tick landing just before waitpid() blocks is not lost. */
#define TICK_USEC	100000

struct task {
	pid_t tid;
	pid_t tgid;
	bool execed;	/* runs CMD's code, not the forked copy of pbitmap */
	bool exiting;	/* resumed after PTRACE_EVENT_EXIT: never stops again */
	bool stopped;	/* stop-all phase: in a ptrace-stop, not resumed */
	int sig;	/* stop-all phase: signal to deliver on detach */
	bool want_uffd;	/* a new address space: turn fault-around off in it */
	bool want_exit;	/* stop at the end of this system call: @nr, @args */
	long nr;
	uint64_t args[6];
};

/* The tracer's copy of the userfaultfd that keeps fault-around off in a
 * process; closing it turns fault-around back on. */
struct proc_uffd {
	pid_t tgid;
	int fd;
};

/*
 * No record describes a file past 2^55 bytes (PBITMAP_MAX_RECORD_SIZE
 * bytes of bitmap, 1 GiB granules); pages mapped beyond are not learned.
 */
#define LEARN_OFFSET_MAX \
	((uint64_t)PBITMAP_MAX_RECORD_SIZE * 8 << PBITMAP_MAX_PAGE_SHIFT)

struct learner {
	double window;		/* seconds after the first exec, 0: none */
	bool window_armed;
	pid_t child;
	bool child_done;
	int child_status;
	struct task *tasks;
	size_t nr_tasks, cap_tasks;
	bool seccomp;		/* tracees stop where pages leave (seccomp filter) */
	bool syscall_stops;	/* tracees stop at every system call (--window) */
	bool no_fault_around;	/* turn fault-around off in the tracees */
	struct proc_uffd *uffds;
	size_t nr_uffds, cap_uffds;
	struct pb_observed_file *files;
	size_t nr_files, cap_files;
	size_t last_file;	/* lookup cache: maps lines come grouped */
	uint64_t page_size;
	uint64_t *pm_buf;
};

static volatile sig_atomic_t window_expired;
static volatile sig_atomic_t forward_to;

/* ---- signals ------------------------------------------------------------ */

static void on_alarm(int sig)
{
	(void)sig;
	window_expired = 1;
}

static void on_terminate(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/*
	 * ^C from a terminal (SI_KERNEL) already reached CMD, which is in our
	 * process group; forwarding it would deliver it twice.
	 */
	if (si->si_code != SI_KERNEL && forward_to > 0)
		kill(forward_to, sig);
}

struct saved_signals {
	struct sigaction alrm, intr, term;
};

/* Installed after fork(): CMD must inherit our dispositions, not these. */
static void catch_signals(struct saved_signals *old)
{
	struct sigaction sa = { 0 };

	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: the window timer must interrupt waitpid(). */
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, &old->alrm);
	sa.sa_handler = NULL;
	sa.sa_sigaction = on_terminate;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGINT, NULL, &old->intr);
	sigaction(SIGTERM, NULL, &old->term);
	/* A signal ignored by whoever started us stays ignored. */
	if (old->intr.sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa, NULL);
	if (old->term.sa_handler != SIG_IGN)
		sigaction(SIGTERM, &sa, NULL);
}

static void set_timer(double first, bool repeat)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	if (first > 0) {
		it.it_value.tv_sec = (time_t)first;
		it.it_value.tv_usec = (suseconds_t)((first - (double)(time_t)first) * 1e6);
		if (!it.it_value.tv_sec && !it.it_value.tv_usec)
			it.it_value.tv_usec = 1;
	}
	if (repeat)
		it.it_interval.tv_usec = TICK_USEC;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void restore_signals(const struct saved_signals *old)
{
	set_timer(0, false);
	forward_to = 0;
	sigaction(SIGALRM, &old->alrm, NULL);
	sigaction(SIGINT, &old->intr, NULL);
	sigaction(SIGTERM, &old->term, NULL);
}

/* ---- the table of traced tasks ------------------------------------------ */

static struct task *task_find(struct learner *L, pid_t tid)
{
	for (size_t i = 0; i < L->nr_tasks; i++)
		if (L->tasks[i].tid == tid)
			return &L->tasks[i];
	return NULL;
}

/* Thread group of @tid, from /proc (the clone flags are not visible to us). */
static pid_t read_tgid(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = tid;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fp = fopen(path, "re");
	if (!fp)
		return tid;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(fp);
	return tgid;
}

/* Tasks are added as soon as we hear of them: the new task's first stop
 * and its parent's fork event arrive in either order. */
static struct task *task_add(struct learner *L, pid_t tid, pid_t tgid, bool execed)
{
	struct task *t = task_find(L, tid), *n;

	if (t)
		return t;
	n = pb_grow(L->tasks, L->nr_tasks, &L->cap_tasks, sizeof(*n), 16);
	if (!n) {
		pb_error_errno(NULL, "record: malloc");
		return NULL;
	}
	L->tasks = n;
	t = &L->tasks[L->nr_tasks++];
	*t = (struct task){ .tid = tid, .tgid = tgid, .execed = execed };
	return t;
}

static void task_remove(struct learner *L, pid_t tid)
{
	struct task *t = task_find(L, tid);

	if (t)
		*t = L->tasks[--L->nr_tasks];
}

/* Is @t the last thread of its process that has not begun to exit? */
static bool last_thread(const struct learner *L, const struct task *t)
{
	for (size_t i = 0; i < L->nr_tasks; i++) {
		const struct task *o = &L->tasks[i];

		if (o != t && o->tgid == t->tgid && !o->exiting)
			return false;
	}
	return true;
}

/* ---- sampling: /proc/PID/maps and /proc/PID/pagemap --------------------- */

struct mapping {
	uint64_t start, end, offset;
	dev_t dev;
	ino_t ino;
	const char *path;
};

/* One line of /proc/PID/maps; false for anything but a mapped file. */
static bool parse_maps_line(char *line, struct mapping *m)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perms[8];
	int pos = -1;
	size_t len;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms,
		   &off, &maj, &min, &ino, &pos) != 7 || pos < 0)
		return false;
	/* inode 0: anonymous, [heap], [stack], [vdso]...; no '/': not a file */
	if (!ino || line[pos] != '/' || end <= start)
		return false;
	len = strlen(line + pos);
	if (len && line[pos + len - 1] == '\n')
		line[pos + len - 1] = '\0';
	m->start = start;
	m->end = end;
	m->offset = off;
	m->dev = makedev(maj, min);
	m->ino = (ino_t)ino;
	m->path = line + pos;
	return true;
}

static struct pb_observed_file *file_get(struct learner *L, const struct mapping *m)
{
	struct pb_observed_file *sf, *n;

	if (L->last_file < L->nr_files) {
		sf = &L->files[L->last_file];
		if (sf->dev == m->dev && sf->ino == m->ino)
			return sf;
	}
	for (size_t i = 0; i < L->nr_files; i++) {
		if (L->files[i].dev == m->dev && L->files[i].ino == m->ino) {
			L->last_file = i;
			return &L->files[i];
		}
	}
	n = pb_grow(L->files, L->nr_files, &L->cap_files, sizeof(*n), 32);
	if (!n) {
		pb_error_errno(m->path, "malloc");
		return NULL;
	}
	L->files = n;
	sf = &L->files[L->nr_files];
	*sf = (struct pb_observed_file){ .dev = m->dev, .ino = m->ino,
					 .page_size = L->page_size, .path = strdup(m->path) };
	if (!sf->path) {
		pb_error_errno(m->path, "malloc");
		return NULL;
	}
	L->last_file = L->nr_files++;
	return sf;
}

static int mark_page(struct learner *L, struct pb_observed_file *sf, uint64_t idx)
{
	if (idx >= LEARN_OFFSET_MAX / L->page_size) {
		if (!sf->told_too_far)
			pb_note(sf->path, "mapped at offset %" PRIu64 ", past the largest "
				"file a bitmap describes (%" PRIu64 " bytes); not learned there",
				idx * L->page_size, LEARN_OFFSET_MAX);
		sf->told_too_far = true;
		return 0;
	}
	if (pb_pageset_add(&sf->pages, idx))
		return pb_error_errno(sf->path, "malloc");
	return 0;
}

/*
 * Record the present pages of one file mapping.  A present page is one the
 * process read (or that fault-around mapped for it); a swapped-out page of
 * a private mapping was copied from the file first, so it counts too.
 */
static void sample_mapping(struct learner *L, const struct mapping *m, int pagemap)
{
	uint64_t ps = L->page_size, first = m->start / ps;
	uint64_t n = (m->end - m->start) / ps, base = m->offset / ps;
	struct pb_observed_file *sf = NULL;

	for (uint64_t done = 0; done < n;) {
		uint64_t want = n - done < PM_CHUNK ? n - done : PM_CHUNK;
		ssize_t got = pread(pagemap, L->pm_buf, want * sizeof(uint64_t),
				    (off_t)((first + done) * sizeof(uint64_t)));

		/* Nothing more: the process is gone; what we have is all there is. */
		if (got < (ssize_t)sizeof(uint64_t))
			return;
		want = (uint64_t)got / sizeof(uint64_t);
		for (uint64_t i = 0; i < want; i++) {
			if (!(L->pm_buf[i] & (PM_PRESENT | PM_SWAP)))
				continue;
			if (!sf)
				sf = file_get(L, m);
			if (!sf || mark_page(L, sf, base + done + i))
				return;
		}
		done += want;
	}
}

/*
 * Call @fn for the part within [lo, hi) of every file mapping of the
 * address space @tid runs in.
 */
static void each_file_mapping(struct learner *L, pid_t tid, uint64_t lo, uint64_t hi,
			      void (*fn)(struct learner *, const struct mapping *, int),
			      int arg)
{
	char maps_path[64];
	char *line = NULL;
	size_t cap = 0;
	FILE *maps;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)tid);
	maps = fopen(maps_path, "re");
	if (!maps) {
		if (errno != ENOENT && errno != ESRCH)
			pb_error_errno(maps_path, "cannot open");
		return;
	}
	while (getline(&line, &cap, maps) > 0) {
		struct mapping m;

		if (!parse_maps_line(line, &m) || m.end <= lo || m.start >= hi)
			continue;
		if (m.start < lo) {
			m.offset += lo - m.start;
			m.start = lo;
		}
		if (m.end > hi)
			m.end = hi;
		fn(L, &m, arg);
	}
	free(line);
	fclose(maps);
}

/* Sample [lo, hi) of the address space that @tid runs in. */
static void sample_range(struct learner *L, pid_t tid, uint64_t lo, uint64_t hi)
{
	char pm_path[64];
	int pm;

	snprintf(pm_path, sizeof(pm_path), "/proc/%d/pagemap", (int)tid);
	pm = open(pm_path, O_RDONLY | O_CLOEXEC);
	if (pm < 0) {
		if (errno != ENOENT && errno != ESRCH)
			pb_error_errno(pm_path, "cannot open");
		return;
	}
	each_file_mapping(L, tid, lo & ~(L->page_size - 1), hi, sample_mapping, pm);
	close(pm);
}

static void sample(struct learner *L, pid_t tid)
{
	sample_range(L, tid, 0, UINT64_MAX);
}

/* ---- fault-around off: one userfaultfd per traced process --------------- */

static struct proc_uffd *uffd_find(struct learner *L, pid_t tgid)
{
	for (size_t i = 0; i < L->nr_uffds; i++)
		if (L->uffds[i].tgid == tgid)
			return &L->uffds[i];
	return NULL;
}

/* Fault-around comes back in @tgid (gone, or a new program in it). */
static void uffd_drop(struct learner *L, pid_t tgid)
{
	struct proc_uffd *u = uffd_find(L, tgid);

	if (u) {
		close(u->fd);
		*u = L->uffds[--L->nr_uffds];
	}
}

static void register_mapping(struct learner *L, const struct mapping *m, int uffd)
{
	(void)L;
	pb_uffd_register(uffd, m->start, m->end);
}

/* @tid is in a syscall-exit-stop: turn fault-around off in its process. */
static void uffd_attach(struct learner *L, struct task *t, int *status, bool *interrupted)
{
	int fd = pb_tracee_userfaultfd(t->tid, t->tgid, status);
	struct proc_uffd *n;

	*interrupted = fd == PB_NONE;
	if (fd < 0)
		return;
	n = pb_grow(L->uffds, L->nr_uffds, &L->cap_uffds, sizeof(*n), 8);
	if (!n) {
		close(fd);
		return;
	}
	L->uffds = n;
	uffd_drop(L, t->tgid);
	L->uffds[L->nr_uffds++] = (struct proc_uffd){ .tgid = t->tgid, .fd = fd };
	each_file_mapping(L, t->tid, 0, UINT64_MAX, register_mapping, fd);
}

/* ---- ptrace --------------------------------------------------------------- */

static void resume(const struct learner *L, const struct task *t, int sig)
{
	bool stop = L->syscall_stops || t->want_uffd || t->want_exit;

	/* ESRCH: killed meanwhile (SIGKILL needs no consent); its exit follows. */
	ptrace(stop ? PTRACE_SYSCALL : PTRACE_CONT, t->tid, NULL, (void *)(long)sig);
}

static unsigned long event_msg(pid_t tid)
{
	unsigned long msg = 0;

	ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg);
	return msg;
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static void on_new_task(struct learner *L, struct task *parent, int event)
{
	pid_t tid = (pid_t)event_msg(parent->tid);
	/* fork and vfork make a process; clone may make either. */
	pid_t tgid = event == PTRACE_EVENT_CLONE ? read_tgid(tid) : tid;

	struct task *t = tid > 0 ? task_add(L, tid, tgid, parent->execed) : NULL;

	/* A fork's copy of the address space has no userfaultfd (threads
	 * and vfork children share their parent's). */
	if (t && t->execed && L->no_fault_around && event != PTRACE_EVENT_VFORK &&
	    tgid != parent->tgid)
		t->want_uffd = true;
}

static void on_exec(struct learner *L, struct task *t)
{
	/* A thread other than the leader that execs takes over the leader's
	 * pid; its old tid vanishes without an exit notification. */
	pid_t former = (pid_t)event_msg(t->tid);

	if (former > 0 && former != t->tid)
		task_remove(L, former);
	t = task_find(L, t->tid);	/* the removal may have moved it */
	if (!t)
		return;
	uffd_drop(L, t->tgid);
	t->tgid = t->tid;
	t->execed = true;
	t->exiting = false;
	t->want_uffd = L->no_fault_around;
	t->want_exit = false;
	if (L->window > 0 && !L->window_armed) {
		L->window_armed = true;
		set_timer(L->window, true);
	}
}

/*
 * The mm is still intact at PTRACE_EVENT_EXIT.  Sample when the leader
 * exits (exit_group stops the leader too) and when the last thread does
 * (the leader may have left early with pthread_exit()).  The pre-exec
 * child is still pbitmap itself: nothing to learn there.
 */
static void on_exit_event(struct learner *L, struct task *t)
{
	if (t->execed && (t->tid == t->tgid || last_thread(L, t)))
		sample(L, t->tid);
	t->exiting = true;
}

static void on_wait(struct learner *L, pid_t tid, int status, bool run);

/*
 * Can the execve() that @tid entered, of the path at @addr in its memory,
 * succeed?  A shell or execvp() tries every directory of PATH in turn;
 * sampling the whole address space before each failing try would cost
 * more than everything else.  Answers true when in doubt.
 */
static bool may_exec(pid_t tid, uint64_t addr)
{
	char path[PATH_MAX], name[64];
	struct iovec local = { path, sizeof(path) - 1 }, remote = { (void *)(uintptr_t)addr, sizeof(path) - 1 };
	ssize_t got = process_vm_readv(tid, &local, 1, &remote, 1, 0);
	int dir;
	bool ok;

	if (got <= 0)
		return true;	/* the string may cross into an unreadable page */
	path[got] = '\0';
	if (strlen(path) == (size_t)got)
		return true;
	/* resolved as the tracee would: its root, its working directory */
	snprintf(name, sizeof(name), "/proc/%d/%s", (int)tid, path[0] == '/' ? "root" : "cwd");
	dir = open(name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return true;
	ok = faccessat(dir, path[0] == '/' ? path + 1 : path, X_OK, 0) == 0 || errno != ENOENT;
	close(dir);
	return ok;
}

/* -ERESTART*: the kernel may restart the call; leave its registers alone. */
static bool restarting(const struct __ptrace_syscall_info *info)
{
	return info->exit.is_error && info->exit.rval <= -512 && info->exit.rval >= -516;
}

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#define NATIVE_ARCH 0	/* any: no 32-bit personality to tell apart */
#endif

/*
 * A system call stop of @t (entry, seccomp or exit).  At the entry of one
 * that takes file pages away, sample what it is about to take.  At the exit
 * of an mmap or mremap, turn fault-around off in the new mapping; at the
 * first exit in a new address space, set that up.  Returns true when @t
 * stopped for something else meanwhile and that stop has been handled.
 */
static bool on_syscall_stop(struct learner *L, struct task *t)
{
	struct __ptrace_syscall_info info;
	const uint64_t *a;
	struct proc_uffd *u;
	bool interrupted = false, compat;
	int status;

	if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, (void *)sizeof(info), &info) <= 0 ||
	    !t->execed)
		return false;
	compat = NATIVE_ARCH && info.arch != NATIVE_ARCH;
	if (compat) {
		/* a 32-bit program (or int 0x80): no userfaultfd for it
		 * (tracee.c injects x86-64 calls), so fault-around stays on;
		 * its calls that drop pages are followed below */
		t->want_uffd = t->want_exit = false;
		if (info.op == PTRACE_SYSCALL_INFO_EXIT)
			return false;
	}
	if (info.op == PTRACE_SYSCALL_INFO_EXIT) {
		u = uffd_find(L, t->tgid);
		if (t->want_exit && u && !info.exit.is_error) {
			uint64_t len = t->nr == SYS_mremap ? t->args[2] : t->args[1];
			uint64_t at = (uint64_t)info.exit.rval;

			/* an mmap that stopped here mapped a file */
			if (t->nr == SYS_mmap)
				pb_uffd_register(u->fd, at, at + len);
			else
				each_file_mapping(L, t->tid, at, at + len, register_mapping, u->fd);
		}
		t->want_exit = false;
		if (t->want_uffd && !restarting(&info)) {
			t->want_uffd = false;
			uffd_attach(L, t, &status, &interrupted);
			if (interrupted)
				on_wait(L, t->tid, status, true);
		}
		return interrupted;
	}
	/* With the filter, the seccomp stop of the same call follows. */
	if (info.op == PTRACE_SYSCALL_INFO_ENTRY && L->seccomp)
		return false;
	if (info.op == PTRACE_SYSCALL_INFO_ENTRY) {
		t->nr = pb_syscall_as_native(info.arch, (long)info.entry.nr);
		memcpy(t->args, info.entry.args, sizeof(t->args));
	} else if (info.op == PTRACE_SYSCALL_INFO_SECCOMP) {
		t->nr = pb_syscall_as_native(info.arch, (long)info.seccomp.nr);
		memcpy(t->args, info.seccomp.args, sizeof(t->args));
	} else {
		return false;
	}
	a = t->args;
	if (!pb_drops_pages(t->nr, a, L->no_fault_around))
		return false;
	if (t->nr == SYS_execve || t->nr == SYS_execveat) {
		if (t->nr == SYS_execveat || may_exec(t->tid, a[0]))
			sample(L, t->tid);
	}
	else if (t->nr != SYS_mmap || (a[3] & MAP_FIXED))
		sample_range(L, t->tid, a[0], a[0] + a[1]);
	t->want_exit = !compat && (t->nr == SYS_mmap || t->nr == SYS_mremap) &&
		       uffd_find(L, t->tgid);
	return false;
}

/*
 * Handle one ptrace-stop of @t.  With @run, resume it as the kind of stop
 * requires; without (stopping everything), leave it stopped and remember
 * the signal it was about to receive.
 */
static void on_stop(struct learner *L, struct task *t, int status, bool run)
{
	int sig = WSTOPSIG(status), event = (int)((unsigned int)status >> 16);
	bool syscall_stop = event == PTRACE_EVENT_SECCOMP ||
			    (event == 0 && sig == (SIGTRAP | 0x80));
	pid_t tid = t->tid;

	if (syscall_stop) {
		/* stopping everything: the window's sample takes it all */
		if (run && on_syscall_stop(L, t))
			return;
		event = PTRACE_EVENT_SECCOMP;	/* no signal to deliver */
	}
	switch (event) {
	case 0:
		/* signal-delivery-stop: deliver the signal as if we were not here */
		t->sig = sig;
		break;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		on_new_task(L, t, event);
		break;
	case PTRACE_EVENT_EXEC:
		on_exec(L, t);
		break;
	case PTRACE_EVENT_EXIT:
		on_exit_event(L, t);
		break;
	case PTRACE_EVENT_STOP:
		if (is_stop_signal(sig) && run) {
			/* group-stop: stay stopped until SIGCONT, but keep
			 * reporting events (PTRACE_CONT would end the stop) */
			ptrace(PTRACE_LISTEN, tid, NULL, NULL);
			return;
		}
		break;
	}
	/* the handlers above may have moved the table */
	t = task_find(L, tid);
	if (!t)
		return;
	if (run) {
		resume(L, t, event ? 0 : t->sig);
		t->sig = 0;
	} else {
		t->stopped = true;
		if (event)
			t->sig = 0;
		/* stopped at EVENT_EXIT: still sampled below, then let go */
		t->exiting = false;
	}
}

static void on_gone(struct learner *L, pid_t tid, int status)
{
	task_remove(L, tid);
	/* a process ends when its leader is reaped */
	uffd_drop(L, tid);
	if (tid == L->child) {
		L->child_done = true;
		L->child_status = status;
		forward_to = 0;
	}
}

/* One waitpid() result.  Unknown tids are new tracees (auto-attached). */
static void on_wait(struct learner *L, pid_t tid, int status, bool run)
{
	struct task *t;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		on_gone(L, tid, status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	t = task_find(L, tid);
	if (!t)
		t = task_add(L, tid, read_tgid(tid), true);
	if (t)
		on_stop(L, t, status, run);
	else if (run)
		ptrace(PTRACE_CONT, tid, NULL, NULL);
}

/* ---- the window: stop everything, sample, let go ------------------------ */

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static bool all_stopped(const struct learner *L)
{
	for (size_t i = 0; i < L->nr_tasks; i++)
		if (!L->tasks[i].stopped && !L->tasks[i].exiting)
			return false;
	return true;
}

/*
 * PTRACE_INTERRUPT every task and wait for the stops.  A task blocked in
 * an uninterruptible wait (a vfork parent whose child we stopped) cannot
 * stop; after a timeout it is sampled running and detached when it stops.
 */
static void stop_all(struct learner *L)
{
	long long deadline = now_ns() + STOP_ALL_TIMEOUT_NS;
	int status;
	pid_t tid;

	for (size_t i = 0; i < L->nr_tasks; i++)
		if (!L->tasks[i].exiting &&
		    ptrace(PTRACE_INTERRUPT, L->tasks[i].tid, NULL, NULL))
			L->tasks[i].exiting = true;	/* gone: its exit follows */
	while (!all_stopped(L) && now_ns() < deadline) {
		/* the window timer still ticks and interrupts this wait */
		tid = waitpid(-1, &status, __WALL);
		if (tid > 0)
			on_wait(L, tid, status, false);
		else if (errno != EINTR)
			break;
	}
}

/* A task whose /proc/TID/maps shows its process's address space. */
static bool can_sample(const struct task *t)
{
	return t->execed && (t->stopped || !t->exiting);
}

/* Sample each address space once, then detach every stopped task. */
static void sample_all_and_detach(struct learner *L)
{
	for (size_t i = 0; i < L->nr_tasks; i++) {
		const struct task *t = &L->tasks[i];
		bool first = can_sample(t);

		for (size_t j = 0; j < i && first; j++)
			if (L->tasks[j].tgid == t->tgid && can_sample(&L->tasks[j]))
				first = false;
		if (first)
			sample(L, t->tid);
	}
	for (size_t i = 0; i < L->nr_tasks;) {
		struct task *t = &L->tasks[i];

		if (t->stopped && !ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)t->sig))
			task_remove(L, t->tid);
		else
			i++;
	}
	/* untraced from now on: fault-around as usual */
	while (L->nr_uffds)
		uffd_drop(L, L->uffds[0].tgid);
}

/* After the window: detach latecomers as they stop; collect CMD's status. */
static void let_go(struct learner *L)
{
	int status;
	pid_t tid;

	for (;;) {
		tid = waitpid(-1, &status, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			break;	/* ECHILD: nothing left */
		}
		if (WIFSTOPPED(status)) {
			/* A child forked just before this stop is attached too:
			 * it stops in its turn and is let go here as well. */
			int event = (int)((unsigned int)status >> 16);
			int sig = WSTOPSIG(status);

			/* a syscall stop has no signal to pass on */
			if (event || sig == (SIGTRAP | 0x80))
				sig = 0;
			ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
			continue;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			on_gone(L, tid, status);
	}
}

/* ---- running CMD ------------------------------------------------------------ */

/*
 * Fork CMD and seize it before it executes anything: the child waits on a
 * pipe until the tracer is attached, so the exec is the first event seen.
 */
static pid_t spawn_traced(const struct learner *L, char **cmd)
{
	long opts = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
		    PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL |
		    PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACESECCOMP;
	int sync[2], status;
	pid_t pid;
	char c = 0;

	if (pipe2(sync, O_CLOEXEC))
		return pb_error_errno(NULL, "record: pipe");
	pid = fork();
	if (pid < 0) {
		pb_error_errno(NULL, "record: fork");
		close(sync[0]);
		close(sync[1]);
		return PB_FAIL;
	}
	if (pid == 0) {
		close(sync[1]);
		if (read(sync[0], &c, 1) != 1)
			_exit(127);	/* the tracer gave up */
		if (L->seccomp && pb_install_unmap_filter(L->no_fault_around)) {
			pb_error_errno(cmd[0], "record: cannot install the seccomp filter");
			_exit(126);
		}
		execvp(cmd[0], cmd);
		c = errno == ENOENT ? 127 : 126;
		pb_error_errno(cmd[0], "cannot execute");
		_exit(c);
	}
	close(sync[0]);
	if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)opts)) {
		pb_error_errno(cmd[0], "record: cannot trace");
		close(sync[1]);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		return PB_FAIL;
	}
	if (write(sync[1], &c, 1) != 1)
		pb_error_errno(cmd[0], "record: pipe");
	close(sync[1]);
	return pid;
}

/* Trace until every tracee is gone or the window has been sampled. */
static void trace(struct learner *L)
{
	int status;
	pid_t tid;

	for (;;) {
		if (window_expired) {
			stop_all(L);
			set_timer(0, false);
			sample_all_and_detach(L);
			let_go(L);
			return;
		}
		tid = waitpid(-1, &status, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno != ECHILD)
				pb_error_errno(NULL, "record: waitpid");
			return;
		}
		on_wait(L, tid, status, true);
	}
}

static int exit_code(const struct learner *L)
{
	if (!L->child_done)
		return PB_EXIT_FAIL;
	if (WIFEXITED(L->child_status))
		return WEXITSTATUS(L->child_status);
	return 128 + WTERMSIG(L->child_status);
}

void pb_observed_free(struct pb_observed_file *files, size_t nr_files)
{
	for (size_t i = 0; i < nr_files; i++) {
		free(files[i].path);
		pb_pageset_free(&files[i].pages);
	}
	free(files);
}

static void learner_free(struct learner *L)
{
	pb_observed_free(L->files, L->nr_files);
	free(L->tasks);
	while (L->nr_uffds)
		uffd_drop(L, L->uffds[0].tgid);
	free(L->uffds);
	free(L->pm_buf);
}

int pb_observe(char **cmd, double window, struct pb_observed_file **files,
	       size_t *nr_files)
{
	struct learner L = { .window = window,
			     .page_size = (uint64_t)sysconf(_SC_PAGESIZE) };
	struct saved_signals old;
	struct task *t;
	int ret;

	*files = NULL;
	*nr_files = 0;
	L.pm_buf = malloc(PM_CHUNK * sizeof(uint64_t));
	if (!L.pm_buf) {
		pb_error_errno(NULL, "record: malloc");
		return PB_EXIT_FAIL;
	}
	window_expired = 0;
	/*
	 * A seccomp filter outlives the tracer, and SECCOMP_RET_TRACE without
	 * one fails the call: with --window, or on a kernel without seccomp
	 * filters, stop at every system call instead.
	 */
	L.no_fault_around = pb_fault_around_can_be_off();
#ifdef __x86_64__
	L.seccomp = !L.window && pb_unmap_filter_available();
#endif
	L.syscall_stops = !L.seccomp;
	L.child = spawn_traced(&L, cmd);
	if (L.child < 0) {
		learner_free(&L);
		return PB_EXIT_FAIL;
	}
	forward_to = L.child;
	catch_signals(&old);
	t = task_add(&L, L.child, L.child, false);
	if (t)
		trace(&L);
	else
		kill(L.child, SIGKILL);
	restore_signals(&old);
	/* what was observed is the caller's now */
	*files = L.files;
	*nr_files = L.nr_files;
	L.files = NULL;
	L.nr_files = 0;
	ret = exit_code(&L);
	learner_free(&L);
	return ret;
}
