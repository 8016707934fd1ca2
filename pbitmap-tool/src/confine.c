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
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pbitmap.h"

static struct {
	int fd;		/* O_PATH descriptor of the root, -1 while unconfined */
	char *dir;	/* its name, a prefix of every path handled */
	size_t len;
} root = { .fd = -1 };

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

int pb_path_open(const char *path, int oflags, mode_t mode)
{
	const char *in;

	if (root.fd < 0)
		return open(path, oflags, mode);
	in = inside_root(path);
	if (!in) {
		errno = EXDEV;	/* a caller's bug: every path is built as root + name */
		return -1;
	}
	return openat2_in_root(root.fd, in, oflags, mode);
}

int pb_path_lstat(const char *path, struct stat *st)
{
	int fd, ret;

	if (root.fd < 0)
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

	if (root.fd < 0)
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
