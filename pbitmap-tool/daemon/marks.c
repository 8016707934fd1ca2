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

/*
 * Filesystems on a block device that no daemon or server answers for:
 * @type's name, kept, or NULL.
 */
static const char *local_type(const char *type)
{
	static const char *const types[] = {
		"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "nilfs2",
		"bcachefs", "vfat", "msdos", "exfat", "ntfs3", "hfsplus", "iso9660", "udf",
		"squashfs", "erofs", NULL,
	};

	for (const char *const *t = types; *t; t++)
		if (!strcmp(type, *t))
			return *t;
	return NULL;
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
 * The mount @mount_id at @mnt, O_PATH, or -1 and errno.  The path's last
 * component is looked up without following it or mounting an automount
 * point there (an ESP on x-systemd.automount would be mounted again after
 * each idle unmount), and what is found is asked nothing but what the
 * kernel has (AT_STATX_DONT_SYNC).  It must be that mount, not one
 * mounted over it since (a user's FUSE mount with user_allow_other), nor
 * another given its ID once it was unmounted: EXDEV otherwise, or
 * ENOTDIR for a file's mount (a bind-mounted file).  @dev, when not 0, is
 * the device its root must have.  @stx, when not NULL, is its statx().
 * The directories above it are looked up as any path is: a filesystem
 * mounted over one of them is asked (only root mounts there).
 */
static int mount_path_open(const char *mnt, unsigned int mount_id, dev_t dev, struct statx *stx)
{
	struct statx own;
	int fd;

	if (!stx)
		stx = &own;
	fd = open(mnt, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (statx(fd, "", AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_MNT_ID, stx)) {
		close(fd);
		return -1;
	}
	errno = 0;
	if (!(stx->stx_mask & STATX_MNT_ID) || stx->stx_mnt_id != mount_id ||
	    (dev && makedev(stx->stx_dev_major, stx->stx_dev_minor) != dev))
		errno = EXDEV;
	else if (!S_ISDIR(stx->stx_mode))
		errno = ENOTDIR;
	if (errno) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The root of that mount (mount_path_open()) opened O_RDONLY, from the
 * mount found, without another look-up; -1 and errno.
 */
static int mount_root_open(const char *mnt, unsigned int mount_id, dev_t dev, struct statx *stx)
{
	int path_fd = mount_path_open(mnt, mount_id, dev, stx), fd;

	if (path_fd < 0)
		return -1;
	fd = openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(path_fd);
	return fd;
}

/*
 * Opened for each burst of events and closed after it, not kept open from
 * the start: a descriptor kept on a filesystem makes it busy, and no
 * filesystem the daemon watched (a USB stick, a backup disk) could be
 * unmounted while it ran.  The mount must be the one watched, its root's
 * device the same (mount_path_open()), and its filesystem ID too.
 */
int fs_root_open(const struct watched_fs *fs)
{
	struct statfs sfs;
	int fd;

	if (!fs)
		return -1;
	/* not O_PATH: open_by_handle_at() */
	fd = mount_root_open(fs->mnt, fs->mount_id, fs->dev, NULL);
	if (fd >= 0 && (fstatfs(fd, &sfs) || memcmp(&sfs.f_fsid, &fs->mnt_fsid, sizeof(sfs.f_fsid)))) {
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

/* A line of /proc/self/mountinfo of a local filesystem (local_type()). */
struct mount_line {
	unsigned int id;
	dev_t dev;		/* mountinfo's: its superblock's */
	const char *type;	/* local_type()'s */
	char *mnt;
};

/*
 * Opens on the filesystem of the mount @m, whose root is @root (statfs
 * @sfs), reported by file handle, and where to open those handles
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
static void watch_opens(int fan, const struct mount_line *m, int root, const struct statfs *sfs,
			bool known)
{
	struct watched_fs *first, *fs;
	struct statfs events;
	__kernel_fsid_t fsid;
	struct stat st;
	uint64_t subvol;
	char *name = NULL;
	int target = -1;

	if (fan < 0)
		return;
	if (fstat(root, &st) || (target = opens_mark_target(root, sfs)) < 0 || fstatfs(target, &events) ||
	    !(name = strdup(m->mnt))) {
		if (!known)
			pb_error_errno(m->mnt, "cannot watch opens of data files");
		goto out;
	}
	memcpy(&fsid, &events.f_fsid, sizeof(fsid));
	subvol = mount_subvol(root);
	first = fs_of_event(&fsid, subvol);
	/* entries are of mounts there now (forget_gone()): on another device, a twin */
	if (first && first->sb_dev != m->dev) {
		if (!known)
			pb_skip(m->mnt, "opens of data files not watched: it has the filesystem ID "
				"of %s (a copy with the same UUID?), and an event does not say "
				"which of the two it came from", first->mnt);
		goto out;
	}
	if (!first && pbd.nr_fs == MAX_LOCAL_FS)
		goto out;	/* no entry for its events: not marked */
	if (fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, target, NULL)) {
		if (!known)
			pb_error_errno(m->mnt, "cannot watch opens of data files");
		goto out;
	}
	/* the same subvolume of the same filesystem again: kept where it is */
	if ((first && first->subvol == subvol) || pbd.nr_fs == MAX_LOCAL_FS)
		goto out;	/* else its files are opened through another mount */
	fs = &pbd.fs[pbd.nr_fs++];
	*fs = (struct watched_fs){ .fsid = fsid, .dev = st.st_dev, .sb_dev = m->dev, .subvol = subvol,
				   .mount_id = m->id, .mnt = name };
	memcpy(&fs->mnt_fsid, &sfs->f_fsid, sizeof(fs->mnt_fsid));
	name = NULL;
out:
	if (target >= 0)
		close(target);
	free(name);
}

/*
 * How much of a range one POSIX_FADV_WILLNEED reads on the filesystem
 * whose root is @root, and in *@wide whether the kernel's read-ahead
 * window there is at least the largest request: its block device's
 * (blockdev.c: a btrfs's one device too), read from sysfs here, in the
 * daemon's root, for the children, which must not read sysfs in other
 * users' roots (willneed.c).  Named through /proc/self/fd: the root
 * found, not whatever its path leads to now.
 */
static uint64_t mount_chunk(int root, bool *wide)
{
	char why[PB_BLOCKDEV_WHY], name[64];
	dev_t dev;

	*wide = false;
	snprintf(name, sizeof(name), "/proc/self/fd/%d", root);
	if (pb_block_device(name, &dev, why, sizeof(why)))
		return PB_WILLNEED_CHUNK_DEFAULT;
	*wide = pb_window_wide_of_device(dev);
	return pb_willneed_chunk_of_device(dev);
}

/* @dev into @devs (of *@nr, room for @max) unless there already. */
static void add_dev(dev_t *devs, size_t *nr, size_t max, dev_t dev)
{
	for (size_t i = 0; i < *nr; i++)
		if (devs[i] == dev)
			return;
	if (*nr < max)
		devs[(*nr)++] = dev;
}

static void free_mounts(struct mount_line *lines, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(lines[i].mnt);
	free(lines);
}

/*
 * The local filesystems of /proc/self/mountinfo, into *@lines (to free
 * with free_mounts()): their number, or -1.
 */
static ssize_t read_mounts(struct mount_line **lines)
{
	char *buf = NULL, mnt[PATH_MAX], type[64], *sep;
	const char *local;
	unsigned int id, maj, min;
	size_t cap = 0, nr = 0, room = 0;
	struct mount_line *l = NULL, *grown;
	FILE *fp = fopen("/proc/self/mountinfo", "re");

	if (!fp) {
		pb_error_errno("/proc/self/mountinfo", "cannot read");
		return -1;
	}
	while (getline(&buf, &cap, fp) > 0) {
		sep = strstr(buf, " - ");
		/* mountinfo escapes blanks as \040: such mounts are left out */
		if (!sep || sscanf(buf, "%u %*u %u:%u %*s %4095s", &id, &maj, &min, mnt) != 4 ||
		    sscanf(sep + 3, "%63s", type) != 1 || !(local = local_type(type)) || strchr(mnt, '\\'))
			continue;
		if (nr == room) {
			room = room ? 2 * room : 64;
			grown = realloc(l, room * sizeof(*l));
			if (!grown)
				goto fail;
			l = grown;
		}
		l[nr] = (struct mount_line){ .id = id, .dev = makedev(maj, min), .type = local,
					     .mnt = strdup(mnt) };
		if (!l[nr].mnt)
			goto fail;
		nr++;
	}
	free(buf);
	fclose(fp);
	*lines = l;
	return (ssize_t)nr;
fail:
	/* a part of the table would make what is mounted look gone */
	pb_error_errno("/proc/self/mountinfo", "cannot keep");
	free(buf);
	fclose(fp);
	free_mounts(l, nr);
	return -1;
}

static const struct mount_line *line_of_id(const struct mount_line *lines, size_t nr,
					   unsigned int id)
{
	for (size_t i = 0; i < nr; i++)
		if (lines[i].id == id)
			return &lines[i];
	return NULL;
}

static bool dev_mounted(const struct mount_line *lines, size_t nr, dev_t dev)
{
	for (size_t i = 0; i < nr; i++)
		if (lines[i].dev == dev)
			return true;
	return false;
}

/*
 * What was watched and is no longer mounted, forgotten before the mounts
 * of now are looked at.
 *
 * A filesystem unmounted is no longer local: a btrfs's device is an
 * anonymous one (0:NN), which the next tmpfs, FUSE or NFS mount can be
 * given, and a walk that took it as local would enter that mount
 * (is_local(), the walks' devices).  Its exec mark went with its
 * superblock.
 *
 * An open entry whose mount is gone (unmounted, its mount ID now another
 * filesystem's or another subvolume's, or mounted over) is dropped, so that a file of its subvolume is
 * opened through another mount of its filesystem (fs_of_event()), its
 * filesystem mounted again elsewhere gets a new entry there, and its slot
 * serves mounts to come.  A mount moved keeps its entry, at its new path.
 * When one is dropped, the open group's filesystem marks are all removed,
 * and marked again by the mounts of now: a superblock still alive (a lazy
 * unmount with files open) would otherwise keep its mark, and its events,
 * with its ID, be taken for a twin's marked since.
 */
static void forget_gone(int fan_open, const struct mount_line *lines, size_t nr)
{
	size_t kept = 0;
	bool dropped = false;

	for (size_t i = 0; i < pbd.nr_local; i++) {
		if (!dev_mounted(lines, nr, pbd.local[i]))
			continue;
		pbd.local[kept] = pbd.local[i];
		pbd.chunks[kept] = pbd.chunks[i];
		pbd.wide[kept++] = pbd.wide[i];
	}
	pbd.nr_local = kept;
	kept = 0;
	for (size_t i = 0; i < pbd.nr_fs; i++) {
		struct watched_fs *fs = &pbd.fs[i];
		const struct mount_line *m = line_of_id(lines, nr, fs->mount_id);
		char *moved;
		int path_fd = -1;

		if (m && m->dev == fs->sb_dev) {
			if (strcmp(m->mnt, fs->mnt) && (moved = strdup(m->mnt))) {
				free(fs->mnt);
				fs->mnt = moved;
			}
			path_fd = mount_path_open(fs->mnt, fs->mount_id, fs->dev, NULL);
		}
		if (path_fd < 0) {
			free(fs->mnt);
			dropped = true;
			continue;
		}
		close(path_fd);
		pbd.fs[kept++] = *fs;
	}
	pbd.nr_fs = kept;
	if (dropped && fan_open >= 0)
		fanotify_mark(fan_open, FAN_MARK_FLUSH | FAN_MARK_FILESYSTEM, 0, AT_FDCWD, NULL);
}

/*
 * Mark the mount @m: execs in the group @fan, opens in @fan_open.  Its
 * btrfs subvolume's device, when its files report one of their own, into
 * @subvol_devs (of *@nr_subvol): local too, for the children's walks
 * (pb_confine_local()); subvolumes inside it are known by their mount
 * (confine.c).
 */
static void mark_mount(int fan, int fan_open, const struct mount_line *m, dev_t *subvol_devs,
		       size_t *nr_subvol)
{
	bool known = is_local(m->dev), btrfs = !strcmp(m->type, "btrfs"), marked;
	struct statfs sfs;
	struct statx stx;
	int root;

	if (!known && pbd.nr_local == MAX_LOCAL_FS)
		return;
	root = mount_root_open(m->mnt, m->id, 0, &stx);
	if (root < 0 || fstatfs(root, &sfs)) {
		/* hidden: its files have no path, and nothing is opened through it */
		if (errno == EXDEV && pb_verbose)
			pb_note(m->mnt, "not watched here: another filesystem is mounted over it");
		else if (errno != EXDEV && errno != ENOTDIR && !known)
			pb_error_errno(m->mnt, "cannot watch (open)");
		goto out;
	}
	marked = !fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
				pbd.cfg.hold_exec_ms ? FAN_OPEN_EXEC_PERM : FAN_OPEN_EXEC, root, NULL);
	if (btrfs && (marked || known))
		add_dev(subvol_devs, nr_subvol, MAX_WALK_DEVS,
			makedev(stx.stx_dev_major, stx.stx_dev_minor));
	if (!marked) {
		/* refused for a filesystem known already: its opens are left as they are */
		if (!known)
			pb_error_errno(m->mnt, "cannot watch (fanotify_mark)");
		goto out;
	}
	if (known) {
		watch_opens(fan_open, m, root, &sfs, true);
		goto out;
	}
	if (btrfs) {
		pbd.btrfs_watched = true;
		if (!learn_knows_btrfs())
			pb_note(m->mnt, "its files are not learned: btrfs was loaded after "
				"pbitmapd started (restart pbitmapd)");
	}
	pbd.chunks[pbd.nr_local] = mount_chunk(root, &pbd.wide[pbd.nr_local]);
	pbd.local[pbd.nr_local++] = m->dev;
	watch_opens(fan_open, m, root, &sfs, false);
	if (pb_verbose)
		pb_note(m->mnt, "watching execs (%s, %u:%u; read ahead in calls of %llu KiB%s)",
			m->type, major(m->dev), minor(m->dev),
			(unsigned long long)pbd.chunks[pbd.nr_local - 1] >> 10,
			pbd.wide[pbd.nr_local - 1] ? "; the kernel's window is as wide" : "");
out:
	if (root >= 0)
		close(root);
}

/*
 * Mark each local filesystem of /proc/self/mountinfo: execs in the group
 * @fan, opens in @fan_open.  0 or PB_FAIL.  At each change of the mount
 * table, and at SIGHUP, what is no longer mounted is forgotten, and those
 * known already are marked again (a mark that is there stays as it was):
 * one unmounted and mounted again since has lost its marks with its
 * superblock.  The children's walks take as local the devices of now
 * only: the filesystems', then their mounted subvolumes'.
 */
int mark_local(int fan, int fan_open)
{
	static dev_t subvol_devs[MAX_WALK_DEVS];
	struct mount_line *lines;
	ssize_t nr = read_mounts(&lines);
	size_t nr_subvol = 0;

	if (nr < 0)
		return PB_FAIL;
	forget_gone(fan_open, lines, (size_t)nr);
	for (ssize_t i = 0; i < nr; i++)
		mark_mount(fan, fan_open, &lines[i], subvol_devs, &nr_subvol);
	free_mounts(lines, (size_t)nr);
	pb_willneed_use_table(pbd.local, pbd.chunks, pbd.wide, pbd.nr_local);
	pbd.nr_walk_devs = 0;
	for (size_t i = 0; i < pbd.nr_local; i++)
		add_dev(pbd.walk_devs, &pbd.nr_walk_devs, MAX_WALK_DEVS, pbd.local[i]);
	for (size_t i = 0; i < nr_subvol; i++)
		add_dev(pbd.walk_devs, &pbd.nr_walk_devs, MAX_WALK_DEVS, subvol_devs[i]);
	return pbd.nr_local ? 0 : pb_error("/proc/self/mountinfo", "no local filesystem to watch");
}
