// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which filesystems pbitmapd watches: the local block filesystems of
 * /proc/self/mountinfo, each marked whole (FAN_MARK_FILESYSTEM).
 */
#include <errno.h>
#include <endian.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "pbitmapd.h"
#include "blockdev.h"

/* btrfs's file handles (include/linux/exportfs.h, fs/btrfs/export.c) */
#define FILEID_BTRFS_WITHOUT_PARENT	0x4d
#define FILEID_BTRFS_WITH_PARENT_ROOT	0x4f

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

/*
 * The btrfs tree (subvolume) a file handle names, or 0: not a btrfs
 * handle.  btrfs's handles start with the inode's number and its tree's
 * (export.c: struct btrfs_fid).
 */
uint64_t handle_subvol(const struct file_handle *h)
{
	uint64_t tree;

	if (h->handle_type < FILEID_BTRFS_WITHOUT_PARENT || h->handle_type > FILEID_BTRFS_WITH_PARENT_ROOT ||
	    h->handle_bytes < 2 * sizeof(tree))
		return 0;
	memcpy(&tree, h->f_handle + sizeof(tree), sizeof(tree));
	return tree;
}

/* The subvolume mounted at @fd (a btrfs mount's root), or 0. */
static uint64_t mount_subvol(int fd)
{
	struct { struct file_handle h; unsigned char bytes[MAX_HANDLE_SZ]; } fh;
	int mount_id;

	fh.h.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", &fh.h, &mount_id, AT_EMPTY_PATH))
		return 0;
	return handle_subvol(&fh.h);
}

/*
 * The open group's filesystem whose events carry @fsid: its mount of the
 * subvolume @subvol where there is one (its files' names are paths
 * there), else of btrfs's top level (every subvolume's files have paths
 * there), else its first; NULL when not watched.
 */
struct watched_fs *fs_of_event(const __kernel_fsid_t *fsid, uint64_t subvol)
{
	struct watched_fs *first = NULL, *top = NULL;

	for (size_t i = 0; i < pbd.nr_fs; i++) {
		if (memcmp(&pbd.fs[i].fsid, fsid, sizeof(*fsid)))
			continue;
		if (pbd.fs[i].subvol == subvol)
			return &pbd.fs[i];
		if (!top && pbd.fs[i].subvol == BTRFS_FS_TREE_OBJECTID)
			top = &pbd.fs[i];
		if (!first)
			first = &pbd.fs[i];
	}
	return top ? top : first;
}

/*
 * Opened for each event and closed after it, not kept open from the start:
 * a descriptor kept on a filesystem makes it busy, and no filesystem the
 * daemon watched (a USB stick, a backup disk) could be unmounted while it
 * ran.  What is mounted there now must be the filesystem watched.
 */
int fs_root_open(const struct watched_fs *fs)
{
	struct statfs sfs;
	struct stat st;
	int fd;

	if (!fs)
		return -1;
	fd = open(fs->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);	/* not O_PATH: open_by_handle_at() */
	if (fd >= 0 && (fstatfs(fd, &sfs) || fstat(fd, &st) || st.st_dev != fs->dev ||
			memcmp(&sfs.f_fsid, &fs->mnt_fsid, sizeof(sfs.f_fsid)))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * The generation of the btrfs top level's root directory (tree 5's first
 * inode), as a handle to it must carry before Linux 6.2: btrfs_get_dentry()
 * then compared it even when 0, which means "any" only since 29f486996d66,
 * and mkfs.btrfs gives that directory generation 3 or so.  Read from its
 * inode item through any descriptor of the filesystem, @fd
 * (BTRFS_IOC_TREE_SEARCH_V2, which needs CAP_SYS_ADMIN); 0 when that fails,
 * which 6.2 and later take.
 */
static uint32_t btrfs_top_generation(int fd)
{
	uint64_t space[(sizeof(struct btrfs_ioctl_search_args_v2) + 256) / sizeof(uint64_t)] = { 0 };
	struct btrfs_ioctl_search_args_v2 *args = (void *)space;
	struct btrfs_ioctl_search_header sh;
	struct btrfs_inode_item item;

	args->key = (struct btrfs_ioctl_search_key){
		.tree_id = BTRFS_FS_TREE_OBJECTID,
		.min_objectid = BTRFS_FIRST_FREE_OBJECTID, .max_objectid = BTRFS_FIRST_FREE_OBJECTID,
		.min_type = BTRFS_INODE_ITEM_KEY, .max_type = BTRFS_INODE_ITEM_KEY,
		.max_offset = UINT64_MAX, .max_transid = UINT64_MAX, .nr_items = 1,
	};
	args->buf_size = sizeof(space) - sizeof(*args);
	if (ioctl(fd, BTRFS_IOC_TREE_SEARCH_V2, args) || args->key.nr_items != 1)
		return 0;
	memcpy(&sh, args->buf, sizeof(sh));
	if (sh.objectid != BTRFS_FIRST_FREE_OBJECTID || sh.type != BTRFS_INODE_ITEM_KEY ||
	    sh.len < sizeof(item))
		return 0;
	memcpy(&item, (const char *)args->buf + sizeof(sh), sizeof(item));
	return (uint32_t)le64toh(item.generation);	/* i_generation: its low 32 bits */
}

/*
 * Where opens on the filesystem of @mnt_fd (statfs @sfs) are marked: the
 * mount itself, or on btrfs its top level, opened by its handle (tree 5's
 * first inode).  fanotify refuses a mark that reports file handles on a
 * btrfs mounted from a subvolume, as Fedora mounts / and /home (EXDEV:
 * the subvolume's filesystem ID is not its filesystem's); a mark made
 * through the top level covers every subvolume, and its events carry the
 * top level's ID.  A descriptor to close, or -1 and errno.
 */
static int opens_mark_target(int mnt_fd, const struct statfs *sfs)
{
	struct {
		struct file_handle h;
		struct { uint64_t objectid, root_objectid; uint32_t gen; } __attribute__((packed)) fid;
	} top = {
		.h = { .handle_bytes = sizeof(top.fid), .handle_type = FILEID_BTRFS_WITHOUT_PARENT },
		.fid = { BTRFS_FIRST_FREE_OBJECTID, BTRFS_FS_TREE_OBJECTID, 0 },
	};

	if ((uint32_t)sfs->f_type != (uint32_t)BTRFS_SUPER_MAGIC)
		return fcntl(mnt_fd, F_DUPFD_CLOEXEC, 0);
	top.fid.gen = btrfs_top_generation(mnt_fd);
	/* not O_PATH: fanotify_mark() takes no O_PATH descriptor */
	return open_by_handle_at(mnt_fd, &top.h, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/*
 * Opens on the filesystem mounted at @mnt (mountinfo's device @sb_dev),
 * reported by file handle, and where to open those handles
 * (fs_root_open()).  Not fatal: execs are watched whatever happens here
 * (a filesystem without file handles, say).
 *
 * An event names its filesystem by ID alone, and two filesystems can share
 * one: ext4's comes from the UUID, which a copied image or a block
 * snapshot keeps (the benchmark's disk was the guest image's copy).  The
 * kernel marks both; a handle of one would then be opened on the other, a
 * different file of the same inode number, and read there (on the
 * benchmark's disk, every open on the root disk cost two inode reads on
 * the disk measured).  So opens are watched on the first filesystem of an
 * ID only (mountinfo's order: the root first), and said.  A second mount
 * of one filesystem (a bind mount, another btrfs subvolume) is no twin:
 * its events are the first one's.
 */
static void watch_opens(int fan, const char *mnt, dev_t sb_dev, bool known)
{
	struct watched_fs *first, *fs;
	struct statfs sfs, events;
	__kernel_fsid_t fsid;
	struct stat st;
	uint64_t subvol;
	char *name = NULL;
	int fd, target = -1;

	if (fan < 0)
		return;
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstatfs(fd, &sfs) || fstat(fd, &st) || (target = opens_mark_target(fd, &sfs)) < 0 ||
	    fstatfs(target, &events) || !(name = strdup(mnt))) {
		if (!known)
			pb_error_errno(mnt, "cannot watch opens of data files");
		goto out;
	}
	memcpy(&fsid, &events.f_fsid, sizeof(fsid));
	subvol = mount_subvol(fd);
	first = fs_of_event(&fsid, subvol);
	/* entries are of mounts there now (drop_gone_fs()): on another device, a twin */
	if (first && first->sb_dev != sb_dev) {
		pb_skip(mnt, "opens of data files not watched: it has the filesystem ID of %s "
			"(a copy with the same UUID?), and an event does not say which of "
			"the two it came from", first->mnt);
		goto out;
	}
	if (!first && pbd.nr_fs == MAX_LOCAL_FS)
		goto out;	/* no entry for its events: not marked */
	if (fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, target, NULL)) {
		if (!known)
			pb_error_errno(mnt, "cannot watch opens of data files");
		goto out;
	}
	/* the same subvolume of the same filesystem again: kept where it is */
	if ((first && first->subvol == subvol) || pbd.nr_fs == MAX_LOCAL_FS)
		goto out;	/* else its files are opened through another mount */
	fs = &pbd.fs[pbd.nr_fs++];
	*fs = (struct watched_fs){ .fsid = fsid, .dev = st.st_dev, .sb_dev = sb_dev, .subvol = subvol,
				   .mnt = name };
	memcpy(&fs->mnt_fsid, &sfs.f_fsid, sizeof(fs->mnt_fsid));
	name = NULL;
out:
	if (target >= 0)
		close(target);
	if (fd >= 0)
		close(fd);
	free(name);
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
 * The files of a btrfs mount report the device of the subvolume mounted
 * there, not the filesystem's (mountinfo's): that device is local too, for
 * the children's walks (pb_confine_local()).  Subvolumes inside it are
 * known by their mount (confine.c).  Taken only from the mount @mount_id
 * itself: a path can be mounted over (a user's FUSE mount over their USB
 * stick's), and what is on top is not that filesystem.
 */
static void add_mounted_dev(const char *mnt, unsigned int mount_id, const char *type)
{
	struct statx stx;
	dev_t dev;
	int fd;

	if (strcmp(type, "btrfs") || pbd.nr_walk_devs == MAX_WALK_DEVS)
		return;
	fd = open(mnt, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) &&
	    (stx.stx_mask & STATX_MNT_ID) && stx.stx_mnt_id == mount_id) {
		dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
		if (!is_local(dev))
			pbd.walk_devs[pbd.nr_walk_devs++] = dev;
	}
	close(fd);
}

/*
 * Entries of mounts gone (unmounted, or mounted over) dropped, before the
 * mounts of now are looked at (watch_opens() takes every entry for one
 * mounted): a file of their subvolume is then opened through another
 * mount of its filesystem (fs_of_event()), where it would otherwise not be
 * opened at all (skip_handle); their filesystem, mounted again elsewhere
 * or from another device, gets a new entry there; and their slots serve
 * mounts to come.
 */
static void drop_gone_fs(void)
{
	size_t kept = 0;

	for (size_t i = 0; i < pbd.nr_fs; i++) {
		int root = fs_root_open(&pbd.fs[i]);

		if (root < 0) {
			free(pbd.fs[i].mnt);
			continue;
		}
		close(root);
		pbd.fs[kept++] = pbd.fs[i];
	}
	pbd.nr_fs = kept;
}

/*
 * Mark each local filesystem of /proc/self/mountinfo: execs in the group
 * @fan, opens in @fan_open.  0 or PB_FAIL.  At each change of the mount
 * table, and at SIGHUP, those known already are marked again (a mark that
 * is there stays as it was): one unmounted and mounted again since has
 * lost its marks with its superblock.
 */
int mark_local(int fan, int fan_open)
{
	char *buf = NULL, mnt[PATH_MAX], type[64], *sep;
	unsigned int id, maj, min;
	size_t cap = 0;
	FILE *fp = fopen("/proc/self/mountinfo", "re");

	if (!fp)
		return pb_error_errno("/proc/self/mountinfo", "cannot read");
	pbd.nr_walk_devs = 0;	/* the mounted subvolumes of now, none gone since */
	drop_gone_fs();
	while (getline(&buf, &cap, fp) > 0) {
		bool known, marked;

		sep = strstr(buf, " - ");
		if (!sep || sscanf(buf, "%u %*u %u:%u %*s %4095s", &id, &maj, &min, mnt) != 4 ||
		    sscanf(sep + 3, "%63s", type) != 1 || !local_type(type))
			continue;
		known = is_local(makedev(maj, min));
		/* mountinfo escapes blanks as \040: such mounts are left out */
		if ((!known && pbd.nr_local == MAX_LOCAL_FS) || strchr(mnt, '\\'))
			continue;
		marked = !fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
					pbd.cfg.hold_exec_ms ? FAN_OPEN_EXEC_PERM : FAN_OPEN_EXEC,
					AT_FDCWD, mnt);
		if (!marked && !known) {
			pb_error_errno(mnt, "cannot watch (fanotify_mark)");
			continue;
		}
		add_mounted_dev(mnt, id, type);
		if (!marked)	/* refused for a filesystem known already: its opens are left as they are */
			continue;
		if (known) {
			watch_opens(fan_open, mnt, makedev(maj, min), true);
			continue;
		}
		if (!strcmp(type, "btrfs")) {
			pbd.btrfs_watched = true;
			if (!learn_knows_btrfs())
				pb_note(mnt, "its files are not learned: btrfs was loaded after "
					"pbitmapd started (restart pbitmapd)");
		}
		pbd.chunks[pbd.nr_local] = mount_chunk(mnt, &pbd.wide[pbd.nr_local]);
		pbd.local[pbd.nr_local++] = makedev(maj, min);
		watch_opens(fan_open, mnt, makedev(maj, min), false);
		if (pb_verbose)
			pb_note(mnt, "watching execs (%s, %u:%u; read ahead in calls of %llu KiB%s)",
				type, maj, min,
				(unsigned long long)pbd.chunks[pbd.nr_local - 1] >> 10,
				pbd.wide[pbd.nr_local - 1] ? "; the kernel's window is as wide" : "");
	}
	pb_willneed_use_table(pbd.local, pbd.chunks, pbd.wide, pbd.nr_local);
	/* the walks' devices: the filesystems', then their mounted subvolumes' */
	for (size_t i = 0; i < pbd.nr_local && pbd.nr_walk_devs < MAX_WALK_DEVS; i++)
		pbd.walk_devs[pbd.nr_walk_devs++] = pbd.local[i];
	free(buf);
	fclose(fp);
	return pbd.nr_local ? 0 : pb_error("/proc/self/mountinfo", "no local filesystem to watch");
}
