// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which filesystems pbitmapd watches: the local block filesystems of
 * /proc/self/mountinfo, each marked whole (FAN_MARK_FILESYSTEM).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "pbitmapd.h"
#include "blockdev.h"

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

bool is_local(dev_t dev)
{
	for (size_t i = 0; i < pbd.nr_local; i++)
		if (pbd.local[i] == dev)
			return true;
	return false;
}

/* The open group's filesystem whose ID is @fsid, or NULL. */
static struct watched_fs *fs_of_fsid(const __kernel_fsid_t *fsid)
{
	for (size_t i = 0; i < pbd.nr_fs; i++)
		if (!memcmp(&pbd.fs[i].fsid, fsid, sizeof(*fsid)))
			return &pbd.fs[i];
	return NULL;
}

/*
 * Opened for each event and closed after it, not kept open from the start:
 * a descriptor kept on a filesystem makes it busy, and no filesystem the
 * daemon watched (a USB stick, a backup disk) could be unmounted while it
 * ran.  What is mounted there now must be the filesystem watched.
 */
int fs_root_open(const __kernel_fsid_t *fsid)
{
	const struct watched_fs *fs = fs_of_fsid(fsid);
	struct statfs sfs;
	struct stat st;
	int fd;

	if (!fs)
		return -1;
	fd = open(fs->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);	/* not O_PATH: open_by_handle_at() */
	if (fd >= 0 && (fstatfs(fd, &sfs) || fstat(fd, &st) || st.st_dev != fs->dev ||
			memcmp(&sfs.f_fsid, fsid, sizeof(*fsid)))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * Opens on the filesystem mounted at @mnt, reported by file handle, and
 * where to open those handles (fs_root_open()).  Not fatal: execs are watched
 * whatever happens here (a filesystem without file handles, say).
 *
 * An event names its filesystem by ID alone, and two filesystems can share
 * one: ext4's comes from the UUID, which a copied image or a block
 * snapshot keeps (the benchmark's disk was the guest image's copy).  The
 * kernel marks both; a handle of one would then be opened on the other, a
 * different file of the same inode number, and read there (on the
 * benchmark's disk, every open on the root disk cost two inode reads on
 * the disk measured).  So opens are watched on the first filesystem of an
 * ID only (mountinfo's order: the root first), and said.
 */
static void watch_opens(int fan, const char *mnt, bool known)
{
	struct watched_fs *twin;
	struct statfs sfs;
	struct stat st;
	char *name;
	int root = -1;

	if (fan < 0 || pbd.nr_fs == MAX_LOCAL_FS)
		return;
	if (statfs(mnt, &sfs) || stat(mnt, &st) || !(name = strdup(mnt))) {
		if (!known)
			pb_error_errno(mnt, "cannot watch opens of data files");
		return;
	}
	twin = fs_of_fsid((const __kernel_fsid_t *)&sfs.f_fsid);
	/* one no longer mounted where it was: this one now, on whatever device */
	if (twin && twin->dev != st.st_dev && (root = fs_root_open(&twin->fsid)) < 0) {
		twin->dev = st.st_dev;
	} else if (twin && twin->dev != st.st_dev) {
		close(root);
		pb_skip(mnt, "opens of data files not watched: it has the filesystem ID of %s "
			"(a copy with the same UUID?), and an event does not say which of "
			"the two it came from", twin->mnt);
		free(name);
		return;
	}
	/* a further mount of a known device (a btrfs subvolume): EXDEV, not said */
	if (fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, AT_FDCWD, mnt)) {
		if (!known)
			pb_error_errno(mnt, "cannot watch opens of data files");
		free(name);
		return;
	}
	if (twin) {	/* the same filesystem again: kept where it still is, else here */
		root = fs_root_open(&twin->fsid);
		if (root >= 0) {
			close(root);
			free(name);
		} else {
			free(twin->mnt);
			twin->mnt = name;
		}
		return;
	}
	pbd.fs[pbd.nr_fs].mnt = name;
	pbd.fs[pbd.nr_fs].dev = st.st_dev;
	memcpy(&pbd.fs[pbd.nr_fs++].fsid, &sfs.f_fsid, sizeof(pbd.fs[0].fsid));
}

/*
 * How much of a range one POSIX_FADV_WILLNEED reads on the filesystem
 * mounted at @mnt, and in *@wide whether the kernel's read-ahead window
 * there is at least the largest request: its block device's (blockdev.c:
 * a btrfs's one device too), read from sysfs here, in the daemon's root,
 * for the children, which must not read sysfs in other users' roots
 * (willneed.c).
 */
static uint64_t mount_chunk(const char *mnt, bool *wide)
{
	char why[PB_BLOCKDEV_WHY];
	dev_t dev;

	*wide = false;
	if (pb_block_device(mnt, &dev, why, sizeof(why)))
		return PB_WILLNEED_CHUNK_DEFAULT;
	*wide = pb_window_wide_of_device(dev);
	return pb_willneed_chunk_of_device(dev);
}

/*
 * Mark each local filesystem of /proc/self/mountinfo: execs in the group
 * @fan, opens in @fan_open.  0 or PB_FAIL.  At SIGHUP those known already
 * are marked again (a mark that is there stays as it was): one unmounted
 * and mounted again since has lost its marks with its superblock.
 */
int mark_local(int fan, int fan_open)
{
	char *buf = NULL, mnt[PATH_MAX], type[64], *sep;
	unsigned int maj, min;
	size_t cap = 0;
	FILE *fp = fopen("/proc/self/mountinfo", "re");

	if (!fp)
		return pb_error_errno("/proc/self/mountinfo", "cannot read");
	while (getline(&buf, &cap, fp) > 0) {
		bool known;

		sep = strstr(buf, " - ");
		if (!sep || sscanf(buf, "%*u %*u %u:%u %*s %4095s", &maj, &min, mnt) != 3 ||
		    sscanf(sep + 3, "%63s", type) != 1 || !local_type(type))
			continue;
		known = is_local(makedev(maj, min));
		/* mountinfo escapes blanks as \040: such mounts are left out */
		if ((!known && pbd.nr_local == MAX_LOCAL_FS) || strchr(mnt, '\\'))
			continue;
		if (fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
				  pbd.cfg.hold_exec_ms ? FAN_OPEN_EXEC_PERM : FAN_OPEN_EXEC,
				  AT_FDCWD, mnt)) {
			if (!known)	/* a btrfs subvolume's further mount: EXDEV */
				pb_error_errno(mnt, "cannot watch (fanotify_mark)");
			continue;
		}
		if (known) {
			watch_opens(fan_open, mnt, true);
			continue;
		}
		pbd.chunks[pbd.nr_local] = mount_chunk(mnt, &pbd.wide[pbd.nr_local]);
		pbd.local[pbd.nr_local++] = makedev(maj, min);
		watch_opens(fan_open, mnt, false);
		if (pb_verbose)
			pb_note(mnt, "watching execs (%s, %u:%u; read ahead in calls of %llu KiB%s)",
				type, maj, min,
				(unsigned long long)pbd.chunks[pbd.nr_local - 1] >> 10,
				pbd.wide[pbd.nr_local - 1] ? "; the kernel's window is as wide" : "");
	}
	pb_willneed_use_table(pbd.local, pbd.chunks, pbd.wide, pbd.nr_local);
	free(buf);
	fclose(fp);
	return pbd.nr_local ? 0 : pb_error("/proc/self/mountinfo", "no local filesystem to watch");
}
