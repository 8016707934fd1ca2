// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmapd: pbitmap's start-up prefetch on the kernels people run.
 *
 * Without the kernel series, nothing reads a stamped program's pages ahead
 * unless the user puts `pbitmap run` in front of it.  pbitmapd watches the
 * local filesystems for execs (fanotify, FAN_OPEN_EXEC) and, for a stamped
 * program, starts the reads an exec on the patched kernel would start: the
 * program's plan, or its own marked pages and those of the libraries ld.so
 * is about to map (prefetch.c, as `pbitmap run` finds them).
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
 *     as the kernel reads them at mmap: a second group reports opens by
 *     file handle (FAN_REPORT_FID), so that the kernel opens nothing for
 *     the daemon (no FIFO, no device) and an unstamped open costs one
 *     handle look-up and one attribute look-up here.
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
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/capability.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "pbitmap.h"
#include "cli.h"

#ifndef FAN_REPORT_PIDFD
#define FAN_REPORT_PIDFD		0x00000080
#define FAN_EVENT_INFO_TYPE_PIDFD	4
struct fanotify_event_info_pidfd {
	struct fanotify_event_info_header hdr;
	__s32 pidfd;
};
#endif

#define DEFAULT_CONFIG	"/etc/pbitmap.conf"
#define MAX_LOCAL_FS	256
#define CHILD_SECONDS	10	/* wall-clock bound of one exec's work */
#define CHILD_CPU	2	/* CPU seconds, the same */
#define RECENT_SLOTS	64	/* execs remembered to read a file once a second */
#define MAX_CHILDREN	64	/* PBITMAP_DAEMON_MAX_PARALLEL at most */

struct config {
	bool enabled;		/* PBITMAP_DAEMON=yes */
	uint64_t gap;		/* PBITMAP_DAEMON_JOIN_GAP_KB, in bytes */
	uint64_t budget;	/* PBITMAP_DAEMON_BUDGET_MB: bytes one exec may read at most */
	unsigned int pressure;	/* PBITMAP_DAEMON_PRESSURE_PCT: PSI "some avg10" above which to skip */
	unsigned int children;	/* PBITMAP_DAEMON_MAX_PARALLEL */
};

/* What the daemon did since it started: the status file, `pbitmap status`. */
struct counters {
	uint64_t execs, unstamped, prefetched, plans, opens, data_prefetched, files, extents, bytes;
	uint64_t skip_kernel, skip_recent, skip_busy, skip_pressure, skip_gone;
	uint64_t skip_mismatch, skip_fs, skip_denied, skip_budget, skip_failed;
};

/* A child's report, one write() (atomic: less than PIPE_BUF). */
struct report {
	int result;		/* 0, PB_NONE: the exec'd file is not what the name leads to */
	bool gone;		/* the process exited before its root was taken:
				 * only the program's own pages were read */
	bool data;		/* a data file read ahead at its open */
	struct pb_exec_prefetch p;
};

static struct {
	struct config cfg;
	const char *status_path;
	dev_t local[MAX_LOCAL_FS];
	size_t nr_local;
	/* the open group's filesystems: a descriptor to open handles on */
	struct { __kernel_fsid_t fsid; int fd; } fs[MAX_LOCAL_FS];
	size_t nr_fs;
	struct counters n;
	unsigned int children;
	/* each child and when it started: one that overstays is killed */
	struct { pid_t pid; uint64_t start_ms; } kids[MAX_CHILDREN];
	struct recent { dev_t dev; ino_t ino; time_t when; } recent[RECENT_SLOTS];
	unsigned int recent_next;
	int kernel_fd;		/* /proc/sys/vm/pbitmap_enabled, or -1 */
	int own_fds[4];		/* the two groups, the signalfd, the reports' read end */
} d = { .kernel_fd = -1, .own_fds = { -1, -1, -1, -1 } };

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char usage_text[] =
	"Usage: pbitmapd [-c FILE] [-s FILE] [-v]\n"
	"       pbitmapd --check-enabled [-c FILE]\n"
	"Read the marked pages of stamped programs at their exec, on any kernel.\n"
	"\n"
	"  -c, --config FILE   settings (default " DEFAULT_CONFIG ")\n"
	"  -s, --status FILE   where to keep the counters (default " PB_DAEMON_STATUS ")\n"
	"  -v, --verbose       log every stamped exec\n"
	"      --check-enabled exit 0 if the settings enable the daemon, else 1\n"
	"  -h, --help          this text\n"
	"      --version       the version\n"
	"See pbitmapd(8).\n";

void pb_print_verb_help(const char *name)
{
	(void)name;
	fputs(usage_text, stdout);
}

/* ---- settings ------------------------------------------------------------ */

static int config_number(const char *path, unsigned int line, const char *key,
			 const char *val, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || end == val || *end || *val == '-' || v > max)
		return pb_error(path, "line %u: %s: '%s' is not a number from 0 to %" PRIu64,
				line, key, val, max);
	*out = v;
	return 0;
}

static bool config_bool(const char *val, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1", NULL };
	static const char *const no[] = { "no", "false", "off", "0", NULL };

	for (int i = 0; yes[i]; i++) {
		if (!strcasecmp(val, yes[i]) || !strcasecmp(val, no[i])) {
			*out = !strcasecmp(val, yes[i]);
			return true;
		}
	}
	return false;
}

/* The daemon's settings; the trigger's (PBITMAP_RESTAMP ...) are not ours. */
static int config_line(const char *path, unsigned int line, const char *key, const char *val)
{
	uint64_t v;

	if (!strcmp(key, "PBITMAP_DAEMON")) {
		if (!config_bool(val, &d.cfg.enabled))
			return pb_error(path, "line %u: %s=%s is not yes or no", line, key, val);
	} else if (!strcmp(key, "PBITMAP_DAEMON_JOIN_GAP_KB")) {
		if (config_number(path, line, key, val, 65536, &v))
			return PB_FAIL;
		d.cfg.gap = v << 10;
	} else if (!strcmp(key, "PBITMAP_DAEMON_BUDGET_MB")) {
		if (config_number(path, line, key, val, 65536, &v))
			return PB_FAIL;
		d.cfg.budget = v << 20;
	} else if (!strcmp(key, "PBITMAP_DAEMON_PRESSURE_PCT")) {
		if (config_number(path, line, key, val, 100, &v))
			return PB_FAIL;
		d.cfg.pressure = (unsigned int)v;
	} else if (!strcmp(key, "PBITMAP_DAEMON_MAX_PARALLEL")) {
		if (config_number(path, line, key, val, 64, &v))
			return PB_FAIL;
		if (!v)
			return pb_error(path, "line %u: %s=0: at least 1", line, key);
		d.cfg.children = (unsigned int)v;
	} else if (!strncmp(key, "PBITMAP_DAEMON", 14)) {
		return pb_error(path, "line %u: unknown setting %s", line, key);
	}
	return 0;
}

/*
 * Ranges closer than this are read as one.  Measured on Debian's kernels
 * (docs/bench/2026-11-29-pbitmapd.md, cold starts on the 150-IOPS disk):
 * on 6.12, 64 KiB (gdb with a plan: 353 read requests against 391 with 256
 * KiB, 597 without the daemon); on 7.3, which reads executables' mappings
 * in large folios of its own, 256 KiB (gdb: 278 against 314 with 64 KiB,
 * 300 without; cc1: 107 against 168, 94 without).  Kernels between are not
 * measured: from 7.0 on, the larger.
 */
static uint64_t default_gap(void)
{
	struct utsname u;

	return uname(&u) == 0 && atoi(u.release) >= 7 ? 256 << 10 : PB_WILLNEED_GAP;
}

/*
 * /etc/pbitmap.conf, the file the package triggers read: NAME=VALUE lines,
 * '#' comments, a value optionally quoted (the triggers' shell reading of
 * it, done the same way).  A missing file is the defaults.
 */
static int config_load(const char *path)
{
	char *buf = NULL, *key, *val, *eq;
	unsigned int line = 0;
	size_t cap = 0, n;
	int ret = 0;
	FILE *fp;

	d.cfg = (struct config){ .gap = default_gap(), .budget = 256 << 20, .pressure = 10,
				 .children = 4 };
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? 0 : pb_error_errno(path, "cannot read");
	while (!ret && getline(&buf, &cap, fp) > 0) {
		line++;
		key = buf + strspn(buf, " \t");
		if (*key == '#' || *key == '\n' || !*key)
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			ret = pb_error(path, "line %u: not NAME=VALUE", line);
			break;
		}
		val = eq + 1 + strspn(eq + 1, " \t");
		val[strcspn(val, " \t#\n")] = '\0';
		n = strlen(val);
		if (n >= 2 && (val[0] == '"' || val[0] == '\'') && val[n - 1] == val[0]) {
			val[n - 1] = '\0';
			val++;
		}
		while (eq > key && (eq[-1] == ' ' || eq[-1] == '\t'))
			eq--;
		*eq = '\0';
		ret = config_line(path, line, key, val);
	}
	free(buf);
	fclose(fp);
	return ret;
}

/* ---- the local filesystems ----------------------------------------------- */

/* Filesystems on a block device that no daemon or server answers for. */
static bool local_type(const char *type)
{
	static const char *const types[] = {
		"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "nilfs2",
		"bcachefs", "vfat", "msdos", "exfat", "ntfs3", "hfsplus", "iso9660", "udf",
		"squashfs", "erofs", NULL,
	};

	for (const char *const *t = types; *t; t++)
		if (!strcmp(type, *t))
			return true;
	return false;
}

static bool is_local(dev_t dev)
{
	for (size_t i = 0; i < d.nr_local; i++)
		if (d.local[i] == dev)
			return true;
	return false;
}

/*
 * Opens on the filesystem mounted at @mnt, reported by file handle, and a
 * descriptor to open those handles with.  Not fatal: execs are watched
 * whatever happens here (a filesystem without file handles, say).
 */
static void watch_opens(int fan, const char *mnt)
{
	struct statfs sfs;
	int fd;

	if (fan < 0 || d.nr_fs == MAX_LOCAL_FS)
		return;
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);	/* not O_PATH: open_by_handle_at() */
	if (fd < 0 || fstatfs(fd, &sfs) ||
	    fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, AT_FDCWD, mnt)) {
		pb_error_errno(mnt, "cannot watch opens of data files");
		if (fd >= 0)
			close(fd);
		return;
	}
	memcpy(&d.fs[d.nr_fs].fsid, &sfs.f_fsid, sizeof(d.fs[0].fsid));
	d.fs[d.nr_fs++].fd = fd;
}

/*
 * Mark each local filesystem of /proc/self/mountinfo once: execs in the
 * group @fan, opens in @fan_open.  0 or PB_FAIL.
 */
static int mark_local(int fan, int fan_open)
{
	char *buf = NULL, mnt[PATH_MAX], type[64], *sep;
	unsigned int maj, min;
	size_t cap = 0;
	FILE *fp = fopen("/proc/self/mountinfo", "re");

	if (!fp)
		return pb_error_errno("/proc/self/mountinfo", "cannot read");
	while (getline(&buf, &cap, fp) > 0) {
		sep = strstr(buf, " - ");
		if (!sep || sscanf(buf, "%*u %*u %u:%u %*s %4095s", &maj, &min, mnt) != 3 ||
		    sscanf(sep + 3, "%63s", type) != 1 || !local_type(type) ||
		    is_local(makedev(maj, min)) || d.nr_local == MAX_LOCAL_FS)
			continue;
		/* mountinfo escapes blanks as \040: such mounts are left out */
		if (strchr(mnt, '\\'))
			continue;
		if (fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN_EXEC,
				  AT_FDCWD, mnt)) {
			pb_error_errno(mnt, "cannot watch (fanotify_mark)");
			continue;
		}
		d.local[d.nr_local++] = makedev(maj, min);
		watch_opens(fan_open, mnt);
		if (pb_verbose)
			pb_note(mnt, "watching execs (%s, %u:%u)", type, maj, min);
	}
	free(buf);
	fclose(fp);
	return d.nr_local ? 0 : pb_error("/proc/self/mountinfo", "no local filesystem to watch");
}

/* ---- what the machine can spare ------------------------------------------ */

/* "some avg10" of /proc/pressure/memory, in percent; 0 without PSI. */
static unsigned int memory_pressure(void)
{
	char buf[128];
	double avg = 0;
	int fd = open("/proc/pressure/memory", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "some avg10=%lf", &avg) != 1)
		return 0;
	return (unsigned int)avg;
}

/* A number from a one-line file ("max": UINT64_MAX), or UINT64_MAX. */
static uint64_t read_u64(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return UINT64_MAX;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = '\0';
	return buf[0] >= '0' && buf[0] <= '9' ? strtoull(buf, NULL, 10) : UINT64_MAX;
}

/*
 * Bytes one exec may read, as the kernel budgets its prefetch: half of
 * what the machine has available, half of the room below memory.high of
 * the program's cgroup (cgroup v2), and the configured bound.
 */
static uint64_t exec_budget(pid_t pid)
{
	char path[PATH_MAX], *buf = NULL;
	uint64_t budget = d.cfg.budget, high, cur, avail = 0;
	size_t cap = 0;
	FILE *fp = fopen("/proc/meminfo", "re");

	while (fp && getline(&buf, &cap, fp) > 0)
		if (sscanf(buf, "MemAvailable: %" SCNu64 " kB", &avail) == 1)
			break;
	if (fp)
		fclose(fp);
	if (avail && avail << 9 < budget)
		budget = avail << 9;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fp = fopen(path, "re");
	while (fp && getline(&buf, &cap, fp) > 0) {
		if (strncmp(buf, "0::/", 4))
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.high", buf + 3);
		high = read_u64(path);
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.current", buf + 3);
		cur = read_u64(path);
		if (high != UINT64_MAX && cur != UINT64_MAX)
			budget = cur >= high ? 0 : (high - cur) / 2 < budget ? (high - cur) / 2 : budget;
	}
	if (fp)
		fclose(fp);
	free(buf);
	return budget;
}

/* ---- one exec, in a child ------------------------------------------------ */

/*
 * The real user, real group and groups of @pid (as this process's
 * namespace sees them).  Real, not effective: the process may be past
 * another exec by now, of a set-user-ID program whose effective user
 * would read what the user who started it may not.
 */
static int task_creds(pid_t pid, uid_t *uid, gid_t *gid, gid_t *groups, int *nr)
{
	char path[64], *buf = NULL, *p, *end;
	unsigned int u[4], g[4];
	size_t cap = 0;
	int found = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return -1;
	*nr = 0;
	while (getline(&buf, &cap, fp) > 0) {
		if (sscanf(buf, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4) {
			*uid = u[0];
			found |= 1;
		} else if (sscanf(buf, "Gid: %u %u %u %u", &g[0], &g[1], &g[2], &g[3]) == 4) {
			*gid = g[0];
			found |= 2;
		} else if (!strncmp(buf, "Groups:", 7)) {
			for (p = buf + 7; *nr < NGROUPS_MAX; p = end) {
				unsigned long v = strtoul(p, &end, 10);

				if (end == p)
					break;
				groups[(*nr)++] = (gid_t)v;
			}
			found |= 4;
		}
	}
	free(buf);
	fclose(fp);
	return found == 7 ? 0 : -1;
}

/*
 * The exec'd file's path as the task sees it, in @out: the path of @fd
 * here, less the task's root (/proc/PID/root) when that is not "/".
 */
static int task_path(pid_t pid, int fd, char *out, size_t size)
{
	char link[64], here[PATH_MAX], root[PATH_MAX];
	ssize_t n, r;
	size_t len;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, here, sizeof(here) - 1);
	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	r = readlink(link, root, sizeof(root) - 1);
	if (n <= 0 || r <= 0)
		return -1;
	here[n] = root[r] = '\0';
	len = (size_t)r;
	if (!strcmp(root, "/"))
		len = 0;
	else if (strncmp(here, root, len) || here[len] != '/')
		return -1;	/* exec'd through a descriptor from outside its root */
	if (strlen(here + len) >= size)
		return -1;
	strcpy(out, here + len);
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
 * Take @pid's root, credentials and name of the exec'd file: /proc reads
 * only, no disk, so that a short-lived program is still there.  0, or
 * PB_NONE when it is gone.
 */
static int take_task(pid_t pid, int pidfd, int exe_fd, struct task *t)
{
	char path[64];

	if (fgetxattr(exe_fd, PBITMAP_XATTR_NAME, t->marker, sizeof(t->marker)) != sizeof(t->marker))
		memset(t->marker, 0, sizeof(t->marker));
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	t->root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->root < 0 || task_creds(pid, &t->uid, &t->gid, t->groups, &t->nr_groups) ||
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
 * No capability left, whatever the user (root's included: a container's
 * root must not read with the daemon's DAC_READ_SEARCH), and the parent's
 * death still kills us (a change of credentials clears PDEATHSIG).
 */
static int drop_privileges(uid_t uid, gid_t gid, const gid_t *groups, int nr)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct none[2] = { { 0, 0, 0 }, { 0, 0, 0 } };

	if (setgroups((size_t)nr, groups) || setresgid(gid, gid, gid) ||
	    setresuid(uid, uid, uid) || syscall(SYS_capset, &hdr, none) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_PDEATHSIG, SIGKILL))
		return PB_FAIL;
	return 0;
}

/*
 * Become the exec'ing task, as far as reading files goes: its root, its
 * real user and groups, no capability.  0 or PB_FAIL.  The security
 * modules still see the daemon's own label, not the task's.
 */
static int enter_task(const struct task *t)
{
	if (fchdir(t->root) || chroot(".") || chdir("/") ||
	    drop_privileges(t->uid, t->gid, t->groups, t->nr_groups))
		return PB_FAIL;
	close(t->root);
	return 0;
}

/* Send @r to the daemon and end. */
static void __attribute__((noreturn)) child_report(int report_fd, const struct report *r)
{
	if (write(report_fd, r, sizeof(*r)) != sizeof(*r))
		_exit(1);
	_exit(0);
}

/*
 * Limits, so that a crafted record or plan costs bounded work; none of
 * the daemon's descriptors (a filesystem's root is a way out of a
 * chroot); signals as for any process (the parent blocks them).
 */
static void child_limits(void)
{
	struct rlimit cpu = { CHILD_CPU, CHILD_CPU };
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (size_t i = 0; i < d.nr_fs; i++)
		close(d.fs[i].fd);
	for (size_t i = 0; i < sizeof(d.own_fds) / sizeof(d.own_fds[0]); i++)
		if (d.own_fds[i] >= 0)
			close(d.own_fds[i]);
	if (d.kernel_fd >= 0)
		close(d.kernel_fd);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(CHILD_SECONDS);
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
 * The program's own marked pages, first: its record found through its
 * marker (one attribute look-up, one read; no ELF parsing on a start-up's
 * critical path).  0, or PB_NONE for a record the kernel would refuse too.
 */
static int exe_pages(int fd, struct pb_record *rec, const struct stat *st,
		     struct pb_exec_prefetch *p)
{
	uint64_t extents, bytes;

	if (pb_marker_record(fd, st, rec))
		return PB_NONE;
	if (pb_willneed(fd, rec, le64toh(pb_hdr(rec)->content_size), p->gap, p->budget,
			&extents, &bytes))
		return 0;
	p->files++;
	p->extents += extents;
	p->bytes += bytes;
	return 0;
}

/*
 * A record kept in user.pbitmap, as a data file keeps it (a data file at
 * its open, a script exec'd): its marked pages.  The value is read as
 * root; it is decoded (zstd, the record's checks) as nobody, with no
 * capability: a file anybody can label is not parsed with the daemon's
 * privileges.  0, or PB_NONE when it holds no valid record.
 */
static int xattr_pages(int fd, struct pb_exec_prefetch *p)
{
	static unsigned char value[65536];	/* the largest attribute value */
	uint64_t content, extents, bytes;
	struct pb_record r = { 0 };
	struct stat st;
	ssize_t n = fgetxattr(fd, PBITMAP_XATTR_NAME, value, sizeof(value));

	if (n <= 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    drop_privileges(65534, 65534, NULL, 0) || pb_xattr_decode(value, (size_t)n, &r))
		return PB_NONE;
	content = le64toh(pb_hdr(&r)->content_size);
	if (content > (uint64_t)st.st_size)
		content = (uint64_t)st.st_size;
	if (!pb_willneed(fd, &r, content, p->gap, p->budget, &extents, &bytes)) {
		p->files++;
		p->extents += extents;
		p->bytes += bytes;
	}
	pb_record_free(&r);
	return 0;
}

/*
 * One stamped exec: the task taken (before any read, while it runs), the
 * program's own pages read (they are needed first), then, in its root
 * and as its user, its plan or its libraries.
 */
static void exec_child(int exe_fd, pid_t pid, int pidfd, int report_fd)
{
	struct report r = { .p = { .gap = d.cfg.gap, .budget = exec_budget(pid) } };
	struct pb_record rec = { 0 };
	static struct task t;
	bool script = false;
	struct stat st;
	int ret;

	child_limits();
	if (!r.p.budget) {	/* memory.high reached: nothing at all */
		r.p.skip_budget = 1;
		r.result = PB_FAIL;
		child_report(report_fd, &r);
	}
	r.gone = take_task(pid, pidfd, exe_fd, &t) == PB_NONE;
	ret = fstat(exe_fd, &st) ? PB_FAIL : exe_pages(exe_fd, &rec, &st, &r.p);
	if (ret == PB_NONE && pb_marker_is_one(t.marker, sizeof(t.marker))) {
		/*
		 * A marker, and a record the kernel would refuse (a crafted
		 * plan, say): no pages of its own, as in the kernel, but the
		 * libraries' still.
		 */
		ret = 0;
	} else if (ret == PB_NONE) {	/* a script: its own pages, nothing more */
		ret = xattr_pages(exe_fd, &r.p);
		script = !ret;
	}
	if (!ret && !r.gone && !script) {
		ret = enter_task(&t);
		if (!ret) {
			pb_confine_local(d.local, d.nr_local);
			ret = pb_exec_rest(&rec, &st, t.exe, &r.p);
		}
	}
	if (pb_verbose && r.gone)	/* no name in its root: the name here */
		task_path(getpid(), exe_fd, t.exe, sizeof(t.exe));
	if (pb_verbose)
		pb_note(t.exe, "pid %d: %s, %" PRIu64 " files, %" PRIu64
			" extents, %" PRIu64 " bytes", (int)pid,
			ret ? "not read ahead" : script ? "a script: its own pages" :
			r.gone ? "gone; its own pages only" :
			r.p.plan ? "plan" : "per-file bitmaps", r.p.files, r.p.extents, r.p.bytes);
	r.result = ret;
	child_report(report_fd, &r);
}

/* ---- the parent ---------------------------------------------------------- */

static void kid_started(pid_t pid)
{
	d.children++;
	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (!d.kids[i].pid) {
			d.kids[i].pid = pid;
			d.kids[i].start_ms = now_ms();
			return;
		}
}

static void kid_ended(pid_t pid)
{
	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (d.kids[i].pid == pid) {
			d.kids[i].pid = 0;
			if (d.children)
				d.children--;
			return;
		}
}

/*
 * A child past its alarm is stopped (its user may SIGSTOP it once it has
 * the user's credentials, and a stopped process gets no SIGALRM): killed,
 * so that no user can fill the slots and turn the daemon off.
 */
static void kill_overstayed(void)
{
	uint64_t now = now_ms();

	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (d.kids[i].pid && now - d.kids[i].start_ms > (CHILD_SECONDS + 2) * 1000)
			kill(d.kids[i].pid, SIGKILL);
}

static bool seen_recently(dev_t dev, ino_t ino, time_t now)
{
	for (unsigned int i = 0; i < RECENT_SLOTS; i++)
		if (d.recent[i].dev == dev && d.recent[i].ino == ino && now - d.recent[i].when < 2)
			return true;
	d.recent[d.recent_next] = (struct recent){ dev, ino, now };
	d.recent_next = (d.recent_next + 1) % RECENT_SLOTS;
	return false;
}

/* The patched kernel prefetches itself when vm.pbitmap_enabled is 1. */
static bool kernel_prefetches(void)
{
	char c;

	return d.kernel_fd >= 0 && pread(d.kernel_fd, &c, 1, 0) == 1 && c != '0';
}

/*
 * Whether a stamped file (@st) may be read ahead now, by an exec's or an
 * open's child; counts why not.
 */
static bool may_start(const struct stat *st, time_t now)
{
	if (kernel_prefetches())
		d.n.skip_kernel++;
	else if (seen_recently(st->st_dev, st->st_ino, now))
		d.n.skip_recent++;
	else if (d.children >= d.cfg.children)
		d.n.skip_busy++;
	else if (d.cfg.pressure < 100 && memory_pressure() > d.cfg.pressure)
		d.n.skip_pressure++;
	else
		return true;
	return false;
}

/* Whether to hand this exec to a child; counts why not. */
static bool wanted(int fd, time_t now)
{
	char marker[64];
	struct stat st;

	d.n.execs++;
	/* ERANGE: a value longer than a marker, a script's record */
	if (fgetxattr(fd, PBITMAP_XATTR_NAME, marker, sizeof(marker)) < 0 && errno != ERANGE) {
		d.n.unstamped++;
		return false;
	}
	if (fstat(fd, &st)) {
		d.n.skip_failed++;
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

static void handle_event(const struct fanotify_event_metadata *m, int report_fd, time_t now)
{
	int pidfd = event_pidfd(m);
	pid_t child;

	if (m->fd >= 0 && (m->mask & FAN_OPEN_EXEC) && wanted(m->fd, now)) {
		child = fork();
		if (child == 0)
			exec_child(m->fd, m->pid, pidfd, report_fd);
		if (child > 0)
			kid_started(child);
		else
			d.n.skip_failed++;
	}
	if (m->fd >= 0)
		close(m->fd);
	if (pidfd >= 0)
		close(pidfd);
}

/* ---- data files, at their open -------------------------------------------- */

/* Whether a file opened (@fd, O_PATH) is a stamped data file to read ahead. */
static bool data_wanted(int fd, time_t now)
{
	static unsigned char value[65536];	/* the largest attribute value */
	char self[64];
	struct stat st;
	ssize_t n;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = getxattr(self, PBITMAP_XATTR_NAME, value, sizeof(value));
	if (n < 4 || le32toh(*(const uint32_t *)value) != PBITMAP_XATTR_MAGIC)
		return false;	/* unstamped, or an ELF file's marker: execs are the other group's */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return false;
	return may_start(&st, now);
}

/*
 * A data file's marked pages, as the kernel reads them at its mmap.  No
 * rights to take: the opener has opened the file, and the daemon reads it
 * by its handle, looking nothing up by name.
 */
static void data_child(int fd, pid_t pid, int report_fd)
{
	struct report r = { .data = true, .p = { .gap = d.cfg.gap, .budget = exec_budget(pid) } };
	char self[64], name[PATH_MAX];
	ssize_t n;
	int rfd;

	child_limits();
	if (!r.p.budget) {
		r.p.skip_budget = 1;
		r.result = PB_FAIL;
		child_report(report_fd, &r);
	}
	/* the same inode as checked, now for reading (its O_PATH descriptor) */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = pb_verbose ? readlink(self, name, sizeof(name) - 1) : -1;
	name[n > 0 ? n : 0] = '\0';
	rfd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	r.result = rfd < 0 ? PB_NONE : xattr_pages(rfd, &r.p);
	if (pb_verbose)
		pb_note(n > 0 ? name : self, "opened by pid %d: data file, %" PRIu64 " extents, %"
			PRIu64 " bytes", (int)pid, r.p.extents, r.p.bytes);
	child_report(report_fd, &r);
}

static void handle_open(const struct fanotify_event_metadata *m, int report_fd, time_t now)
{
	const struct fanotify_event_info_fid *fid = event_info(m, FAN_EVENT_INFO_TYPE_FID);
	int mount_fd = -1, fd;
	pid_t child;

	for (size_t i = 0; fid && i < d.nr_fs; i++)
		if (!memcmp(&d.fs[i].fsid, &fid->fsid, sizeof(fid->fsid)))
			mount_fd = d.fs[i].fd;
	d.n.opens++;
	if (mount_fd < 0 || !(m->mask & FAN_OPEN))
		return;
	/* O_PATH: nothing is opened for reading until it is known to be a data file */
	fd = open_by_handle_at(mount_fd, (struct file_handle *)(uintptr_t)fid->handle,
			       O_PATH | O_CLOEXEC);
	if (fd < 0)
		return;		/* deleted since */
	if (data_wanted(fd, now)) {
		child = fork();
		if (child == 0)
			data_child(fd, m->pid, report_fd);
		if (child > 0)
			kid_started(child);
		else
			d.n.skip_failed++;
	}
	close(fd);
}

/*
 * Read what @fan has, through @handle.  Events of a group that reports
 * file handles are 4-byte aligned in the buffer: each is copied to an
 * aligned place before its 8-byte fields are read.
 */
static void read_events(int fan, int report_fd,
			void (*handle)(const struct fanotify_event_metadata *, int, time_t))
{
	static char buf[8192];
	static union {
		struct fanotify_event_metadata m;
		char bytes[sizeof(buf)];
	} ev;
	time_t now = (time_t)(now_ms() / 1000);	/* monotonic: a clock step changes nothing */
	ssize_t n = read(fan, buf, sizeof(buf));

	for (size_t off = 0; n > 0 && off + FAN_EVENT_METADATA_LEN <= (size_t)n;) {
		memcpy(&ev.m, buf + off, FAN_EVENT_METADATA_LEN);
		if (ev.m.event_len < FAN_EVENT_METADATA_LEN || off + ev.m.event_len > (size_t)n)
			break;
		memcpy(ev.bytes, buf + off, ev.m.event_len);
		if (ev.m.vers == FANOTIFY_METADATA_VERSION)
			handle(&ev.m, report_fd, now);
		off += ev.m.event_len;
	}
}

static void add_report(const struct report *r)
{
	d.n.skip_budget += r->p.skip_budget;
	d.n.skip_gone += r->gone;
	if (r->result) {
		if (!r->data && !r->p.skip_budget) {
			d.n.skip_mismatch += r->result == PB_NONE;
			d.n.skip_failed += r->result != PB_NONE;
		}
		return;
	}
	if (r->data) {
		d.n.data_prefetched++;
	} else {
		d.n.prefetched++;
		d.n.plans += r->p.plan;
	}
	d.n.files += r->p.files;
	d.n.extents += r->p.extents;
	d.n.bytes += r->p.bytes;
	d.n.skip_mismatch += r->p.skip_mismatch;
	d.n.skip_fs += r->p.skip_fs;
	d.n.skip_denied += r->p.skip_denied;
}

/* The counters, replaced whole: a reader never sees half of them. */
static void write_status(void)
{
	char tmp[PATH_MAX];
	FILE *fp;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", d.status_path);
	unlink(tmp);
	/* root's only (other users' execs are not theirs to count); no link followed */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	fp = fd < 0 ? NULL : fdopen(fd, "w");
	if (!fp) {
		if (fd >= 0)
			close(fd);
		return;
	}
	fprintf(fp, "pid %d\npending %u\nexecs %" PRIu64 "\nunstamped %" PRIu64 "\nprefetched %" PRIu64
		"\nplans %" PRIu64 "\nopens %" PRIu64 "\ndata_prefetched %" PRIu64 "\nfiles %" PRIu64 "\nextents %" PRIu64 "\nbytes %" PRIu64
		"\nskip_kernel %" PRIu64 "\nskip_recent %" PRIu64 "\nskip_busy %" PRIu64
		"\nskip_pressure %" PRIu64 "\nskip_gone %" PRIu64 "\nskip_mismatch %" PRIu64
		"\nskip_fs %" PRIu64 "\nskip_denied %" PRIu64 "\nskip_budget %" PRIu64
		"\nskip_failed %" PRIu64 "\n", (int)getpid(), d.children, d.n.execs, d.n.unstamped,
		d.n.prefetched, d.n.plans, d.n.opens, d.n.data_prefetched, d.n.files, d.n.extents, d.n.bytes, d.n.skip_kernel,
		d.n.skip_recent, d.n.skip_busy, d.n.skip_pressure, d.n.skip_gone,
		d.n.skip_mismatch, d.n.skip_fs, d.n.skip_denied, d.n.skip_budget, d.n.skip_failed);
	if (fclose(fp) || rename(tmp, d.status_path))
		unlink(tmp);
}

/* Reap children and read their reports: whether there were any. */
static bool reap(int report_fd)
{
	struct report r;
	bool any = false;
	int status;

	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		kid_ended(pid);
		if (WIFSIGNALED(status))	/* its alarm, CPU limit, or kill_overstayed() */
			d.n.skip_failed++;
	}
	while (read(report_fd, &r, sizeof(r)) == sizeof(r)) {
		add_report(&r);
		any = true;
	}
	return any;
}

/* Events seen: when it moved, the status file is due within a second. */
static uint64_t events_seen(void)
{
	return d.n.execs + d.n.opens;
}

/*
 * Handle events until SIGTERM or SIGINT: 0, or PB_FAIL.  Execs first: an
 * exec is an open too, and its plan must not be pre-empted by the open.
 */
static int serve(int fan, int fan_open)
{
	int pipefd[2], sfd;
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
	d.own_fds[0] = fan;
	d.own_fds[1] = fan_open;
	d.own_fds[2] = sfd;
	d.own_fds[3] = pipefd[0];
	write_status();
	/*
	 * The status file is rewritten when a read-ahead starts or ends, and
	 * otherwise (unstamped execs and opens) at most once a second: an
	 * unstamped file costs the daemon one read of its event and one
	 * attribute look-up, not a file written.
	 */
	for (uint64_t written = now_ms(), seen = events_seen();;) {
		struct pollfd pfd[4] = { { fan, POLLIN, 0 }, { fan_open, POLLIN, 0 },
					 { sfd, POLLIN, 0 }, { pipefd[0], POLLIN, 0 } };
		unsigned int children = d.children;
		struct signalfd_siginfo si;

		if (poll(pfd, 4, seen != events_seen() || d.children ? 1000 : -1) < 0 &&
		    errno != EINTR)
			return pb_error_errno(NULL, "poll");
		kill_overstayed();
		if (pfd[0].revents & POLLIN)
			read_events(fan, pipefd[1], handle_event);
		if (pfd[1].revents & POLLIN)
			read_events(fan_open, pipefd[1], handle_open);
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
				write_status();
				return 0;
			}
			if (si.ssi_signo == SIGHUP)
				mark_local(fan, fan_open);	/* filesystems mounted since */
		}
		if (reap(pipefd[0]) || children != d.children ||
		    (seen != events_seen() && now_ms() - written >= 1000)) {
			write_status();
			written = now_ms();
			seen = events_seen();
		}
	}
}

static int start(void)
{
	char dir[PATH_MAX], *slash;
	int fan, fan_open;

	snprintf(dir, sizeof(dir), "%s", d.status_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return pb_error_errno(dir, "cannot create");
	}
	fan = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_PIDFD,
			    O_RDONLY | O_LARGEFILE | O_CLOEXEC | O_NOATIME);
	if (fan < 0)
		return pb_error_errno(NULL, errno == EINVAL ?
				      "fanotify with pidfds needs Linux 5.15 or later" :
				      "fanotify_init (pbitmapd must run as root)");
	/* opens by file handle: the kernel opens nothing for this group */
	fan_open = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_FID,
				 O_RDONLY | O_LARGEFILE | O_CLOEXEC);
	if (fan_open < 0)
		pb_error_errno(NULL, "fanotify_init (FAN_REPORT_FID): data files are not read ahead");
	if (mark_local(fan, fan_open))
		return PB_FAIL;
	/*
	 * Its own code stays in memory: a daemon whose pages were reclaimed
	 * would fault them back in from the disk it is trying to help, at
	 * the moment a program starts.  A 2 MiB static binary; not fatal.
	 */
	if (mlockall(MCL_CURRENT) && pb_verbose)
		pb_note(NULL, "cannot lock its pages in memory (mlockall): %s", strerror(errno));
	d.kernel_fd = open("/proc/sys/vm/pbitmap_enabled", O_RDONLY | O_CLOEXEC);
	return serve(fan, fan_open);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "status", required_argument, NULL, 's' },
		{ "check-enabled", no_argument, NULL, 'E' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = DEFAULT_CONFIG;
	bool check = false;
	int c;

	pb_progname = "pbitmapd";
	d.status_path = PB_DAEMON_STATUS;
	while ((c = pb_getopt(argc, argv, "c:s:", longopts)) != -1) {
		if (c == 'c')
			config = optarg;
		else if (c == 's')
			d.status_path = optarg;
		else if (c == 'E')
			check = true;
		else if (c == 'V')
			return printf("pbitmapd %s\n", PBITMAP_VERSION_STRING) < 0;
		else
			return pb_option_exit(c);
	}
	if (optind < argc)
		return pb_usage_error("unexpected argument '%s'", argv[optind]);
	if (config_load(config))
		return check ? 255 : PB_EXIT_FAIL;	/* ExecCondition: 255 fails the unit */
	if (check)
		return d.cfg.enabled ? PB_EXIT_OK : PB_EXIT_FAIL;
	if (!d.cfg.enabled) {
		pb_note(config, "PBITMAP_DAEMON=yes is not set: nothing to do");
		return PB_EXIT_OK;
	}
	return start() ? PB_EXIT_FAIL : PB_EXIT_OK;
}
