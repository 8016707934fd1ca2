// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --root DIR: every file the tool opens by name is looked up inside DIR.
 *
 * `stamp --root` and `rpm-verify --root` get paths from the root's rpm
 * database and open DIR + PATH.  Resolved by the host, an absolute symlink
 * in the root (usr/lib64 -> /var/victim) or a ".." chain leads out of DIR,
 * and the tool would stamp, or vouch for, a file that is not the package's.
 * Once pb_confine() has run, the part of a path after DIR is resolved by
 * openat2() with RESOLVE_IN_ROOT: symlinks and ".." are resolved as if DIR
 * were "/", the way rpm itself sees them after its chroot(), so nothing
 * outside DIR is opened at all, not even for reading.  Every name-based
 * access of a file to be handled goes through pb_path_*() for that reason.
 * The confinement is process-wide, as chroot(2) is: everything a --root
 * run handles belongs inside the root.
 *
 * pbitmapd confines its look-ups another way (pb_confine_local()): it has
 * chroot()ed into the exec'ing task's root and taken its credentials, and
 * a name is then walked one component at a time, every directory it
 * crosses and the file itself on one of the local filesystems the daemon
 * watches.  That is the kernel's one filesystem test (pbitmap_fs_local()):
 * a look-up that would enter NFS, FUSE or a cluster filesystem stops
 * before it asks that filesystem anything, since a program's start must
 * not wait for a server on the daemon's account.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "pbitmap.h"

static struct {
	int fd;		/* O_PATH descriptor of the root, -1 while unconfined */
	char *dir;	/* its name, a prefix of every path handled */
	size_t len;
} root = { .fd = -1 };

/* pb_confine_local(): the devices of the local filesystems, or none. */
static struct {
	const dev_t *devs;
	size_t nr;
} local;

/* Symbolic links followed in one walk, as the kernel's MAXSYMLINKS. */
#define WALK_MAX_LINKS	40

static int openat2_in_root(int dirfd, const char *path, int oflags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned int)oflags,
		.mode = (oflags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = -1;

	/* EAGAIN: a rename elsewhere raced with resolving ".."; try again. */
	for (int tries = 0; tries < 16; tries++) {
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd;
}

int pb_confine(const char *dir)
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int probe;

	if (fd < 0)
		return pb_error_errno(dir, "cannot open the root directory");
	probe = openat2_in_root(fd, ".", O_PATH | O_CLOEXEC, 0);
	if (probe < 0) {
		int err = errno;

		close(fd);
		if (err == ENOSYS)
			return pb_error(dir, "--root needs openat2() (Linux 5.6 or later) to keep "
					"every path inside the root");
		errno = err;
		return pb_error_errno(dir, "cannot open the root directory");
	}
	close(probe);
	free(root.dir);
	root.dir = strdup(dir);
	if (!root.dir) {
		close(fd);
		return pb_error_errno(dir, "malloc");
	}
	if (root.fd >= 0)
		close(root.fd);
	root.fd = fd;
	root.len = strlen(dir);
	return 0;
}

/* The part of @path inside the root ("/" for the root itself), or NULL. */
static const char *inside_root(const char *path)
{
	if (strncmp(path, root.dir, root.len) ||
	    (path[root.len] != '/' && path[root.len] != '\0'))
		return NULL;
	return path[root.len] ? path + root.len : "/";
}

void pb_confine_local(const dev_t *devs, size_t nr)
{
	local.devs = devs;
	local.nr = nr;
}

/*
 * The type, device and mount of @fd (an O_PATH descriptor) into @mode,
 * @dev, @ino and @mnt, without asking the filesystem to refresh them
 * (AT_STATX_DONT_SYNC: no round trip, should it be a network one); 0 if
 * on a local filesystem, else -1 (EXDEV).  Local: its device is one of
 * the local filesystems', or it is on the mount @parent_mnt of the
 * directory it was found in, one already found local.  That second rule
 * is for btrfs, whose subvolumes each give their files a device of their
 * own, unknown until looked at: a subvolume inside the one mounted stays
 * on the same mount, and so on the same filesystem.
 */
static int walk_check(int fd, uint64_t parent_mnt, mode_t *mode, dev_t *dev, ino_t *ino,
		      uint64_t *mnt)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_INO | STATX_MNT_ID, &stx))
		return -1;
	*mode = stx.stx_mode;
	*dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	*ino = stx.stx_ino;
	*mnt = stx.stx_mask & STATX_MNT_ID ? stx.stx_mnt_id : 0;
	if (*mnt && *mnt == parent_mnt)
		return 0;
	for (size_t i = 0; i < local.nr; i++)
		if (local.devs[i] == *dev)
			return 0;
	errno = EXDEV;
	return -1;
}

/*
 * Replace the component at @rest in @buf (a path being walked) by the
 * target of the link @fd: @buf becomes TARGET/REMAINDER.  0 or -1.
 */
static int walk_splice_link(int fd, char *buf, size_t size, const char *remainder)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
	char *joined;

	if (n <= 0)
		return -1;
	target[n] = '\0';
	if (asprintf(&joined, "%s/%s", target, remainder) < 0)
		return -1;
	if (strlen(joined) >= size) {
		free(joined);
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(buf, joined);
	free(joined);
	return 0;
}

/*
 * The walk's one open that is not O_PATH, of @comp in @dir, where @path_fd
 * is the O_PATH descriptor of @comp checked: so that no filesystem mounted
 * over @comp since (a user's FUSE mount) is entered, as that open would ask
 * its server.  A directory is opened as "." of @path_fd, the very inode
 * checked (no mount is crossed at "."); a file by openat2() with
 * RESOLVE_NO_XDEV.  A file that was the root of a mount when checked (a
 * bind-mounted file: @mount_root, or not known before 5.8, which has no
 * STATX_MNT_ID) cannot be so opened, nor anything where openat2() is
 * missing (before 5.6) or refused (a seccomp filter): openat() then, and
 * the caller's check of the file opened refuses another, after the open.
 */
static int walk_open_last(int dir, int path_fd, const char *comp, int oflags, mode_t mode,
			  bool is_dir, bool mount_root)
{
	struct open_how how = {
		.flags = (unsigned int)oflags,
		.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS,
	};
	int fd;

	if ((oflags & O_CREAT) || (oflags & O_TMPFILE) == O_TMPFILE)
		how.mode = mode;
	if (is_dir)
		return openat(path_fd, ".", oflags);
	if (!mount_root) {
		fd = (int)syscall(SYS_openat2, dir, comp, &how, sizeof(how));
		if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
			return fd;
	}
	return openat(dir, comp, oflags, mode);
}

/*
 * open(@path, @oflags) one component at a time from "/" (the caller's
 * root), following symbolic links (at most 40; not the last component
 * with O_NOFOLLOW) and "..", unless @strict: then either is refused
 * (ELOOP, EINVAL), as the kernel's plan walk refuses them.  Every
 * directory crossed and the last component must be on a local
 * filesystem; the last must be a directory or a regular file unless
 * @oflags has O_PATH, so that no FIFO, device or socket is ever opened.
 */
static int walk_open(const char *path, int oflags, mode_t mode, bool strict)
{
	char buf[2 * PATH_MAX], *comp, *next;
	int dir, fd = -1, path_fd, links = 0;
	uint64_t dir_mnt, root_mnt, mnt;
	mode_t type;
	dev_t dev;
	ino_t ino;

	if (path[0] != '/' || strlen(path) >= sizeof(buf)) {
		errno = path[0] != '/' ? EINVAL : ENAMETOOLONG;
		return -1;
	}
	strcpy(buf, path);
	dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0 || walk_check(dir, 0, &type, &dev, &ino, &root_mnt))
		goto fail;
	dir_mnt = root_mnt;
	for (comp = buf;;) {
		bool last;

		comp += strspn(comp, "/");
		next = comp + strcspn(comp, "/");
		last = next[strspn(next, "/")] == '\0';
		if (*next)
			*next++ = '\0';
		if (!*comp)	/* the path names a directory: "/" or "a/" */
			comp = ".";
		if (strict && !strcmp(comp, "..")) {
			errno = EINVAL;
			goto fail;
		}
		fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || walk_check(fd, dir_mnt, &type, &dev, &ino, &mnt))
			goto fail;
		if (S_ISLNK(type) && !(last && (oflags & O_NOFOLLOW))) {
			if (strict || ++links > WALK_MAX_LINKS) {
				errno = ELOOP;
				goto fail;
			}
			if (walk_splice_link(fd, buf, sizeof(buf), last ? "" : next))
				goto fail;
			close(fd);
			fd = -1;
			comp = buf;
			if (buf[0] == '/') {
				close(dir);
				dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (dir < 0)
					goto fail;
				dir_mnt = root_mnt;
			}
			continue;
		}
		if (last)
			break;
		if (!S_ISDIR(type)) {
			errno = ENOTDIR;
			goto fail;
		}
		close(dir);
		dir = fd;
		dir_mnt = mnt;
		fd = -1;
		comp = next;
	}
	if (oflags & O_PATH) {
		close(dir);
		return fd;
	}
	if (!S_ISREG(type) && !S_ISDIR(type)) {
		errno = ENXIO;	/* never open a FIFO or a device by name */
		goto fail;
	}
	path_fd = fd;
	/*
	 * The same inode as looked at: not swapped for another meanwhile.
	 * Opened non-blocking whatever the caller asked, as the name may
	 * have become a FIFO since (that open would wait for a writer); the
	 * flag is the caller's again once the file is known to be the one.
	 */
	fd = walk_open_last(dir, path_fd, comp, oflags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, mode,
			    S_ISDIR(type), !mnt || mnt != dir_mnt);
	close(path_fd);
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);
		struct stat st;

		if (fstat(fd, &st) || st.st_dev != dev || st.st_ino != ino || fl < 0 ||
		    (!(oflags & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))) {
			close(fd);
			errno = EAGAIN;
			fd = -1;
		}
	}
	close(dir);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	if (dir >= 0) {
		int err = errno;

		close(dir);
		errno = err;
	}
	return -1;
}

int pb_path_open(const char *path, int oflags, mode_t mode)
{
	const char *in;

	if (local.devs)
		return walk_open(path, oflags, mode, false);
	if (root.fd < 0)
		return open(path, oflags, mode);
	in = inside_root(path);
	if (!in) {
		errno = EXDEV;	/* a caller's bug: every path is built as root + name */
		return -1;
	}
	return openat2_in_root(root.fd, in, oflags, mode);
}

int pb_path_open_plan(const char *path)
{
	int oflags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

	if (local.devs)
		return walk_open(path, oflags, 0, true);
	return pb_path_open(path, oflags | O_NOFOLLOW, 0);
}

int pb_path_lstat(const char *path, struct stat *st)
{
	int fd, ret;

	if (root.fd < 0 && !local.devs)
		return lstat(path, st);
	fd = pb_path_open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	ret = fstat(fd, st);
	close(fd);
	return ret;
}

ssize_t pb_path_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	if (root.fd < 0 && !local.devs)
		return readlink(path, buf, size);
	fd = pb_path_open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	n = readlinkat(fd, "", buf, size);
	close(fd);
	return n;
}

FILE *pb_path_fopen_read(const char *path)
{
	int fd = pb_path_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY, 0);
	FILE *fp;

	if (fd < 0)
		return NULL;
	fp = fdopen(fd, "r");
	if (!fp)
		close(fd);
	return fp;
}
