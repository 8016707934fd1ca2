// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writers' lock, and replacing a file by rename.
 *
 * Lock protocol (docs/FORMAT.md, "Locking"): every read-modify-write of a
 * record holds an exclusive flock(2) on the inode it reads, taken before
 * the read, and checks after taking it that the file's name still leads to
 * that inode (another writer may have renamed a new version over it while
 * we waited); if not, it starts again with the new inode.  Any process
 * that can read a file can flock it, so a writer waits only a bounded time
 * (PBITMAP_LOCK_TIMEOUT), and the kernel (issue 11) only ever tries the
 * lock and retries later.
 *
 * An ELF file is never written in place: an open for writing makes every
 * concurrent execve() of it fail with ETXTBSY, and a change that fails half
 * way (a full disk during a re-stamp) must leave the old file.  So a change
 * is made in a private copy beside the file (O_TMPFILE, or a fixed name
 * when the filesystem lacks it), given the original's owner, mode,
 * extended attributes (ACLs, capabilities, security labels) and times,
 * synced, locked, and exchanged with the original in one renameat2().
 * Running programs keep the old inode; the name gets the new one.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "pbitmap.h"

#define XATTR_CAPS		"security.capability"
#define LOCK_TIMEOUT_DEFAULT	30	/* seconds */
#define TMP_SUFFIX		".pbitmap-new"

/* A change in progress: the copy is f->fd, the original is kept here. */
struct pb_replace {
	int orig_fd;		/* the file being replaced, locked */
	int dir_fd;		/* its directory */
	char *dir;		/* for messages */
	char *base;		/* its name in dir_fd */
	char *tmp_name;		/* the copy's name in dir_fd, once it has one */
	bool tmp_linked;	/* tmp_name exists and is ours */
};

/* ---- the lock ------------------------------------------------------------ */

static volatile sig_atomic_t lock_tick;

static void on_lock_tick(int sig)
{
	(void)sig;
	lock_tick = 1;
}

static unsigned int lock_timeout(void)
{
	const char *s = getenv("PBITMAP_LOCK_TIMEOUT");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return LOCK_TIMEOUT_DEFAULT;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 86400)
		return LOCK_TIMEOUT_DEFAULT;
	return (unsigned int)v;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A writer locks exclusively; a reader checking what it read, shared. */
static int lock_operation(const struct pb_file *f)
{
	return (f->open_flags & PB_OPEN_SHARED_LOCK) ? LOCK_SH : LOCK_EX;
}

/*
 * Wait for the lock on @fd for at most the timeout.  A periodic SIGALRM
 * (without SA_RESTART) interrupts the blocking flock() so that the wait can
 * end; the caller's handler and timer are put back afterwards.
 */
static int wait_for_lock(struct pb_file *f)
{
	struct sigaction sa = { .sa_handler = on_lock_tick }, old_sa;
	struct itimerval tick = { { 0, 100000 }, { 0, 100000 } }, old_timer;
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	unsigned int timeout = lock_timeout();
	double start = now_seconds();
	bool told = false;
	int ret = 0, err = 0;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &old_sa);
	setitimer(ITIMER_REAL, &tick, &old_timer);
	for (;;) {
		if (!flock(f->fd, lock_operation(f)))
			break;
		if (errno != EINTR) {
			err = errno;
			break;
		}
		if (now_seconds() - start >= timeout) {
			err = EWOULDBLOCK;
			break;
		}
		if (!told && pb_verbose && now_seconds() - start >= 1) {
			pb_note(f->path, "waiting for another process's lock on it");
			told = true;
		}
	}
	/* Timer off before the old handler is back: no stray SIGALRM. */
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old_sa, NULL);
	setitimer(ITIMER_REAL, &old_timer, NULL);
	if (err == EWOULDBLOCK)
		ret = pb_skip(f->path, "locked by another process for %u s (pbitmap's writers "
			      "hold flock(2) on a file while they change it); not %s, "
			      "try again later", timeout,
			      (f->open_flags & PB_OPEN_SHARED_LOCK) ? "read" : "changed");
	else if (err) {
		errno = err;
		ret = pb_error_errno(f->path, "flock");
	}
	return ret;
}

/* Does @path (still) lead to the inode of @fd?  (Inside --root, as pb_open() looks.) */
static bool names_inode(const char *path, bool follow, int fd)
{
	struct stat a, b;
	int pfd;

	if (follow) {
		pfd = pb_path_open(path, O_PATH | O_CLOEXEC, 0);
		if (pfd < 0)
			return false;
		if (fstat(pfd, &a)) {
			close(pfd);
			return false;
		}
		close(pfd);
	} else if (pb_path_lstat(path, &a)) {
		return false;
	}
	if (fstat(fd, &b))
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int pb_lock_current(struct pb_file *f)
{
	int ret = 0;

	if (flock(f->fd, lock_operation(f) | LOCK_NB)) {
		if (errno != EWOULDBLOCK)
			return pb_error_errno(f->path, "flock");
		ret = wait_for_lock(f);
		if (ret)
			return ret;
	}
	pb_fault_point("locked");
	if (!names_inode(f->path, f->open_flags & PB_OPEN_FOLLOW, f->fd))
		return 1;	/* replaced while we waited: the caller opens it again */
	return 0;
}

/* ---- the copy --------------------------------------------------------------- */

/* Byte copy when copy_file_range() cannot (another filesystem, old kernel). */
static int copy_by_reading(int from, int to, off_t off, off_t len)
{
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);

	if (!buf)
		return -1;
	while (off < len) {
		size_t want = (size_t)(len - off) < chunk ? (size_t)(len - off) : chunk;
		ssize_t n = pread(from, buf, want, off), w = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;	/* the file shrank under the lock */
			free(buf);
			return -1;
		}
		for (ssize_t done = 0; done < n; done += w) {
			w = pwrite(to, buf + done, (size_t)(n - done), off + done);
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w <= 0) {
				free(buf);
				return -1;
			}
		}
		off += n;
	}
	free(buf);
	return 0;
}

/* copy_file_range() shares extents where the filesystem can (btrfs, XFS). */
static int copy_bytes(int from, int to, off_t len)
{
	off_t in = 0, out = 0;

	while (in < len) {
		ssize_t n = copy_file_range(from, &in, to, &out, (size_t)(len - in), 0);

		if (n > 0)
			continue;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
		    errno == EOPNOTSUPP || errno == EBADF)
			return copy_by_reading(from, to, in, len);
		return -1;
	}
	return 0;
}

/*
 * The copy's name beside the file: fixed, so that a copy left by a crash
 * is found and removed by the next writer (which holds the lock, so no
 * live writer can be using it).  Long names end in a hash instead.
 */
static char *tmp_name_for(const char *base)
{
	size_t len = strlen(base);
	uint32_t h = 2166136261u;
	char *name;

	if (len + 1 + sizeof(TMP_SUFFIX) <= NAME_MAX + 1) {
		if (asprintf(&name, ".%s" TMP_SUFFIX, base) < 0)
			return NULL;
		return name;
	}
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)base[i]) * 16777619u;
	if (asprintf(&name, ".%.200s~%08x" TMP_SUFFIX, base, h) < 0)
		return NULL;
	return name;
}

static void replace_free(struct pb_replace *r)
{
	if (r->dir_fd >= 0)
		close(r->dir_fd);
	free(r->dir);
	free(r->base);
	free(r->tmp_name);
	free(r);
}

/*
 * Split the name to replace (a followed symlink's target) into directory and
 * base.  (The --root runs, which resolve names inside a root, never follow.)
 */
static int split_target(struct pb_file *f, struct pb_replace *r)
{
	char *target = (f->open_flags & PB_OPEN_FOLLOW) ? realpath(f->path, NULL) :
		       strdup(f->path);
	char *slash;

	if (!target)
		return pb_error_errno(f->path, "cannot resolve its name");
	slash = strrchr(target, '/');
	if (!slash) {
		r->dir = strdup(".");
		r->base = strdup(target);
	} else {
		r->base = strdup(slash + 1);
		*(slash == target ? slash + 1 : slash) = '\0';
		r->dir = strdup(target);
	}
	free(target);
	if (!r->dir || !r->base || !*r->base)
		return pb_error_errno(f->path, "cannot split its name");
	r->tmp_name = tmp_name_for(r->base);
	if (!r->tmp_name)
		return pb_error_errno(f->path, "malloc");
	return 0;
}

static int create_failed(struct pb_file *f, const struct pb_replace *r)
{
	return pb_error_errno(f->path, "cannot create its new copy in %s (pbitmap changes a "
			      "program or library by writing a copy beside it and renaming it "
			      "over; the directory must be writable)", r->dir);
}

/* Open the copy: unnamed if the filesystem allows and it can be linked later. */
static int create_copy(struct pb_file *f, struct pb_replace *r)
{
	int fd;

	if (!unlinkat(r->dir_fd, r->tmp_name, 0))
		pb_note(f->path, "removed %s/%s, a copy left by an interrupted pbitmap",
			r->dir, r->tmp_name);
	/* linkat() of an O_TMPFILE file goes through /proc, or needs CAP_DAC_READ_SEARCH. */
	if (!access("/proc/self/fd", X_OK) || geteuid() == 0) {
		fd = openat(r->dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (fd >= 0)
			return fd;
		if (errno == EACCES || errno == EPERM || errno == EROFS ||
		    errno == ENOSPC || errno == EDQUOT)
			return create_failed(f, r);
		/* else the filesystem has no O_TMPFILE: a named copy */
	}
	fd = openat(r->dir_fd, r->tmp_name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return create_failed(f, r);
	r->tmp_linked = true;
	return fd;
}

/*
 * A file with several hard links is refused: the new copy would be reached
 * through this name only.  PB_OPEN_BREAK_LINKS (--break-links) accepts it.
 */
static int check_links(struct pb_file *f)
{
	struct stat st;

	if (fstat(f->fd, &st))
		return pb_error_errno(f->path, "fstat");
	if (st.st_nlink > 1 && !(f->open_flags & PB_OPEN_BREAK_LINKS))
		return pb_skip(f->path, "has %ju hard links: pbitmap replaces a program by a "
			       "new copy, which only this name would get (the other names would "
			       "keep the old file); --break-links does it anyway",
			       (uintmax_t)st.st_nlink);
	return 0;
}

int pb_stage(struct pb_file *f)
{
	struct pb_replace *r;
	struct stat st;
	int fd, ret;

	if (f->rep)
		return 0;
	ret = check_links(f);
	if (ret)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return pb_error_errno(f->path, "malloc");
	r->dir_fd = -1;
	ret = split_target(f, r);
	if (!ret) {
		r->dir_fd = pb_path_open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
		if (r->dir_fd < 0)
			ret = pb_error_errno(f->path, "cannot open its directory %s", r->dir);
	}
	if (ret) {
		replace_free(r);
		return ret;
	}
	fd = create_copy(f, r);
	if (fd < 0) {
		replace_free(r);
		return PB_FAIL;
	}
	if (fstat(f->fd, &st) || copy_bytes(f->fd, fd, st.st_size)) {
		ret = pb_error_errno(f->path, "writing its new copy in %s", r->dir);
		close(fd);
		if (r->tmp_linked)
			unlinkat(r->dir_fd, r->tmp_name, 0);
		replace_free(r);
		return ret;
	}
	pb_fault_point("copied");
	r->orig_fd = f->fd;
	f->fd = fd;
	f->rep = r;
	return 0;
}

void pb_discard(struct pb_file *f)
{
	struct pb_replace *r = f->rep;

	if (!r)
		return;
	close(f->fd);
	if (r->tmp_linked)
		unlinkat(r->dir_fd, r->tmp_name, 0);
	f->fd = r->orig_fd;
	f->rep = NULL;
	replace_free(r);
}

/* ---- metadata -------------------------------------------------------------- */

/* The names in @fd's extended attribute list, NUL-separated; NULL on error. */
static char *list_xattrs(int fd, ssize_t *len)
{
	char *names;

	for (;;) {
		ssize_t n = flistxattr(fd, NULL, 0);

		if (n < 0)
			return (errno == ENOTSUP) ? (*len = 0, calloc(1, 1)) : NULL;
		names = malloc((size_t)n + 1);
		if (!names)
			return NULL;
		*len = flistxattr(fd, names, (size_t)n);
		if (*len >= 0)
			return names;
		free(names);
		if (errno != ERANGE)	/* ERANGE: the list grew meanwhile */
			return NULL;
	}
}

static bool in_list(const char *names, ssize_t len, const char *name)
{
	for (const char *p = names; p < names + len; p += strlen(p) + 1)
		if (!strcmp(p, name))
			return true;
	return false;
}

/* Give @to the attribute @name of @from unless it has the same value already. */
static int copy_xattr(struct pb_file *f, int from, int to, const char *name,
		      char *val, char *cur)
{
	ssize_t n = fgetxattr(from, name, val, XATTR_SIZE_MAX), m;

	if (n < 0)
		return errno == ENODATA ? 0 : pb_error_errno(f->path, "reading attribute %s", name);
	m = fgetxattr(to, name, cur, XATTR_SIZE_MAX);
	if (m == n && !memcmp(val, cur, (size_t)n))
		return 0;
	if (fsetxattr(to, name, val, (size_t)n, 0))
		return pb_error_errno(f->path, "giving its new copy the attribute %s", name);
	return 0;
}

/*
 * Every extended attribute of @from on @to, and none other (a directory's
 * default ACL gives a new file one): user.*, trusted.*, security.* (labels,
 * IMA is refused earlier), system.posix_acl_access.  The capability is
 * left to the caller: chown() and chmod() must come before it.  The
 * user.pbitmap marker describes the old file's layout, not the copy's: the
 * change sets the copy's own before committing (pbfile.c), and it stays.
 */
static int copy_xattrs(struct pb_file *f, int from, int to)
{
	ssize_t from_len, to_len;
	char *from_names = list_xattrs(from, &from_len);
	char *to_names = list_xattrs(to, &to_len);
	char *val = malloc(XATTR_SIZE_MAX), *cur = malloc(XATTR_SIZE_MAX);
	int ret = 0;

	if (!from_names || !to_names || !val || !cur) {
		ret = pb_error_errno(f->path, "listing extended attributes");
		goto out;
	}
	for (const char *p = to_names; !ret && p < to_names + to_len; p += strlen(p) + 1)
		if (!in_list(from_names, from_len, p) && strcmp(p, PBITMAP_XATTR_NAME) &&
		    fremovexattr(to, p) && errno != ENODATA)
			ret = pb_error_errno(f->path, "removing attribute %s from its new copy", p);
	for (const char *p = from_names; !ret && p < from_names + from_len; p += strlen(p) + 1)
		if (strcmp(p, XATTR_CAPS) && strcmp(p, PBITMAP_XATTR_NAME))
			ret = copy_xattr(f, from, to, p, val, cur);
out:
	free(from_names);
	free(to_names);
	free(val);
	free(cur);
	return ret;
}

/*
 * Owner and group, then attributes, then the mode (chown clears set-ID
 * bits), then the capability (chown removes it), then the times.
 */
static int copy_metadata(struct pb_file *f, int from, int to)
{
	unsigned char cap[256];
	ssize_t cap_size;
	struct stat st, now;
	struct timespec times[2];
	int ret;

	if (fstat(from, &st))
		return pb_error_errno(f->path, "fstat");
	if (fchown(to, st.st_uid, st.st_gid))
		return pb_error_errno(f->path, "cannot give its new copy owner %ju and group %ju",
				      (uintmax_t)st.st_uid, (uintmax_t)st.st_gid);
	ret = copy_xattrs(f, from, to);
	if (ret)
		return ret;
	if (fchmod(to, st.st_mode & 07777))
		return pb_error_errno(f->path, "cannot give its new copy mode %04o",
				      (unsigned int)(st.st_mode & 07777));
	cap_size = fgetxattr(from, XATTR_CAPS, cap, sizeof(cap));
	if (cap_size < 0 && errno != ENODATA && errno != ENOTSUP)
		return pb_error_errno(f->path, "reading " XATTR_CAPS);
	if (cap_size >= 0 && fsetxattr(to, XATTR_CAPS, cap, (size_t)cap_size, 0))
		return pb_error_errno(f->path, "giving its new copy its file capabilities");
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	if (futimens(to, times))
		return pb_error_errno(f->path, "setting the times of its new copy");
	if (fstat(to, &now))
		return pb_error_errno(f->path, "fstat");
	if (now.st_uid != st.st_uid || now.st_gid != st.st_gid ||
	    (now.st_mode & 07777) != (st.st_mode & 07777))
		return pb_error(f->path, "its new copy did not keep owner, group and mode "
				"(%ju:%ju %04o instead of %ju:%ju %04o)",
				(uintmax_t)now.st_uid, (uintmax_t)now.st_gid,
				(unsigned int)(now.st_mode & 07777), (uintmax_t)st.st_uid,
				(uintmax_t)st.st_gid, (unsigned int)(st.st_mode & 07777));
	return 0;
}

/* ---- publishing ---------------------------------------------------------- */

static int link_copy(struct pb_file *f, struct pb_replace *r)
{
	char proc[64];

	if (r->tmp_linked)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	if (linkat(AT_FDCWD, proc, r->dir_fd, r->tmp_name, AT_SYMLINK_FOLLOW) &&
	    linkat(f->fd, "", r->dir_fd, r->tmp_name, AT_EMPTY_PATH))
		return pb_error_errno(f->path, "cannot give its new copy the name %s/%s",
				      r->dir, r->tmp_name);
	r->tmp_linked = true;
	return 0;
}

static bool same_inode(const struct stat *a, int fd)
{
	struct stat b;

	return !fstat(fd, &b) && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/*
 * Swap the copy and the file in one step, then check that what came out is
 * the file we locked and read: a package manager (which knows nothing of
 * our lock) may have installed a new version meanwhile.  If so, swap back
 * and give up: its version stays.
 */
static int exchange(struct pb_file *f, struct pb_replace *r)
{
	struct stat out;

	if (renameat2(r->dir_fd, r->tmp_name, r->dir_fd, r->base, RENAME_EXCHANGE)) {
		if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
			return pb_error_errno(f->path, "cannot rename its new copy over it");
		/* No exchange on this filesystem: check, then rename. */
		if (fstatat(r->dir_fd, r->base, &out, AT_SYMLINK_NOFOLLOW) ||
		    !same_inode(&out, r->orig_fd))
			return pb_error(f->path, "was replaced by another program while pbitmap "
					"changed it; left as that program made it");
		if (renameat(r->dir_fd, r->tmp_name, r->dir_fd, r->base))
			return pb_error_errno(f->path, "cannot rename its new copy over it");
		r->tmp_linked = false;
		return 0;
	}
	pb_fault_point("exchanged");
	if (fstatat(r->dir_fd, r->tmp_name, &out, AT_SYMLINK_NOFOLLOW) ||
	    !same_inode(&out, r->orig_fd)) {
		if (renameat2(r->dir_fd, r->tmp_name, r->dir_fd, r->base, RENAME_EXCHANGE)) {
			pb_error_errno(f->path, "cannot swap back: %s/%s is the version another "
				       "program installed meanwhile", r->dir, r->tmp_name);
			r->tmp_linked = false;	/* that name is not ours to remove */
		}
		return pb_error(f->path, "was replaced by another program while pbitmap "
				"changed it; left as that program made it");
	}
	/* tmp_name is now the old file: a crash here leaves it for the next writer. */
	if (unlinkat(r->dir_fd, r->tmp_name, 0))
		pb_error_errno(f->path, "cannot remove the old version, now %s/%s",
			       r->dir, r->tmp_name);
	r->tmp_linked = false;
	return 0;
}

/*
 * The copy, once complete, is open for reading only and locked before
 * anyone can reach it by the file's name: a file open for writing cannot
 * be executed (ETXTBSY), and the lock passes to the new version.
 */
static int reopen_read_only(struct pb_file *f, struct pb_replace *r)
{
	struct stat st;
	int fd = openat(r->dir_fd, r->tmp_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return pb_error_errno(f->path, "cannot reopen its new copy %s/%s",
				      r->dir, r->tmp_name);
	if (fstat(fd, &st) || !same_inode(&st, f->fd)) {
		close(fd);
		return pb_error(f->path, "its new copy %s/%s was replaced by another program",
				r->dir, r->tmp_name);
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		pb_error_errno(f->path, "flock of its new copy");
		close(fd);
		return PB_FAIL;
	}
	close(f->fd);
	f->fd = fd;
	return 0;
}

int pb_commit(struct pb_file *f)
{
	struct pb_replace *r = f->rep;
	int ret;

	if (!r)
		return 0;
	ret = copy_metadata(f, r->orig_fd, f->fd);
	if (!ret && fsync(f->fd))
		ret = pb_error_errno(f->path, "fsync of its new copy");
	if (!ret)
		pb_fault_point("copy-synced");
	if (!ret)
		ret = link_copy(f, r);
	if (!ret)
		pb_fault_point("linked");
	if (!ret)
		ret = reopen_read_only(f, r);
	if (!ret)
		ret = exchange(f, r);
	if (ret) {
		pb_discard(f);
		return ret;
	}
	pb_fault_point("renamed");
	if (fsync(r->dir_fd))
		ret = pb_error_errno(f->path, "fsync of its directory %s", r->dir);
	close(r->orig_fd);	/* releases the lock on the old version */
	f->rep = NULL;
	replace_free(r);
	if (fstat(f->fd, &f->st))
		ret = pb_error_errno(f->path, "fstat");
	return ret;
}

/*
 * A small file replaced whole (pbitmap.h): written beside @path and
 * renamed over it.  The four writers this serves (device-gap's record,
 * export's profile, pbitmapd's status and its kept fault-around value)
 * each had their own copy, differing in what they synced.
 */
int pb_write_small_file(const char *path, const void *buf, size_t len, mode_t mode,
			unsigned int flags)
{
	char tmp[PATH_MAX];
	const char *p = buf;
	int fd, err = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), flags & PB_SMALL_FIXED_TMP ? "%s.tmp" : "%s.XXXXXX",
			     path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	if (flags & PB_SMALL_FIXED_TMP) {
		unlink(tmp);	/* a killed writer's */
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	} else {
		fd = mkostemp(tmp, O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0) {
			err = n < 0 ? -errno : -ENOSPC;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	/* mkostemp() makes it 0600 whatever the umask; so does fchmod() the other way */
	if (!err && fchmod(fd, mode))
		err = -errno;
	if (!err && (flags & PB_SMALL_SYNC) && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
