// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The block device a path's filesystem reads from (blockdev.h).
 *
 * Why not st_dev alone: btrfs gives each subvolume an anonymous device
 * (major 0), like the filesystems on no block device at all, so on a
 * btrfs /usr (Fedora's default) `pbitmap device-gap --set /usr` found
 * nothing to measure and failed at every boot, and pbitmapd, comparing
 * with /usr's st_dev, could never have used a gap measured there.  btrfs
 * names its devices itself (BTRFS_IOC_FS_INFO: the fsid and how many;
 * /sys/fs/btrfs/FSID/devices/NAME/dev: their numbers).  One device is
 * the one every read goes to; on several (RAID, or data spread over
 * disks) there is no single device whose cost is the filesystem's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "pbitmap.h"
#include "blockdev.h"

/* @why from @fmt; returns @ret with errno as it was. */
__attribute__((format(printf, 4, 5)))
static int because(int ret, char *why, size_t size, const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	errno = err;
	return ret;
}

/* Whether sysfs knows @dev as a block device (as pb_block_device_node()). */
static bool is_block_device(dev_t dev)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	return access(path, F_OK) == 0;
}

/* The devices of the btrfs @path is on: exactly one, or the reason. */
static int btrfs_device(const char *path, dev_t *dev, char *why, size_t size)
{
	struct btrfs_ioctl_fs_info_args fi;
	char dir[128], file[PATH_MAX], *p = dir;
	unsigned int maj, min, found = 0;
	struct dirent *de;
	DIR *d;
	FILE *fp;
	int fd, ok;

	/* O_NONBLOCK: a FIFO does not wait for a writer (its ioctl then fails). */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return because(PB_FAIL, why, size, "cannot open");
	memset(&fi, 0, sizeof(fi));
	if (ioctl(fd, BTRFS_IOC_FS_INFO, &fi)) {
		close(fd);
		return because(PB_FAIL, why, size, "cannot ask btrfs for its devices");
	}
	close(fd);
	if (fi.num_devices != 1)
		return because(PB_NONE, why, size, "btrfs on %llu devices",
			       (unsigned long long)fi.num_devices);
	p += snprintf(p, sizeof(dir), "/sys/fs/btrfs/");
	for (int i = 0; i < BTRFS_FSID_SIZE; i++)
		p += sprintf(p, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
			     fi.fsid[i]);
	strcpy(p, "/devices");
	d = opendir(dir);
	if (!d)
		return because(PB_FAIL, why, size, "cannot read %s", dir);
	/*
	 * One entry per device, a link to its sysfs directory; during a
	 * `btrfs replace` the target is listed too: then two, and no answer.
	 */
	while ((errno = 0, de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/dev", dir, de->d_name);
		fp = fopen(file, "re");
		ok = fp && fscanf(fp, "%u:%u", &maj, &min) == 2;
		if (fp)
			fclose(fp);
		if (!ok) {
			closedir(d);
			if (fp)
				errno = EINVAL;
			return because(PB_FAIL, why, size, "cannot read %s", file);
		}
		*dev = makedev(maj, min);
		found++;
	}
	ok = errno == 0;
	closedir(d);
	if (!ok)
		return because(PB_FAIL, why, size, "cannot read %s", dir);
	if (found != 1)
		return because(PB_NONE, why, size, "btrfs lists %u devices in %s", found, dir);
	return 0;
}

/* A name for a filesystem on no block device, for the reason. */
static const char *fs_name(uint32_t type)
{
	static const struct { uint32_t magic; const char *name; } known[] = {
		{ TMPFS_MAGIC, "tmpfs" }, { RAMFS_MAGIC, "ramfs" },
		{ OVERLAYFS_SUPER_MAGIC, "overlayfs" }, { NFS_SUPER_MAGIC, "NFS" },
		{ FUSE_SUPER_MAGIC, "FUSE" }, { CIFS_SUPER_MAGIC, "CIFS" },
		{ SMB2_SUPER_MAGIC, "SMB" }, { 0x2fc12fc1, "ZFS" },
		{ PROC_SUPER_MAGIC, "proc" }, { SYSFS_MAGIC, "sysfs" },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (known[i].magic == type)
			return known[i].name;
	return NULL;
}

int pb_block_device(const char *path, dev_t *dev, char *why, size_t size)
{
	struct statfs sfs;
	struct stat st;
	const char *name;

	if (stat(path, &st))
		return because(PB_FAIL, why, size, "cannot stat");
	if (S_ISBLK(st.st_mode)) {
		*dev = st.st_rdev;
		return 0;
	}
	if (is_block_device(st.st_dev)) {
		*dev = st.st_dev;
		return 0;
	}
	if (statfs(path, &sfs))
		return because(PB_FAIL, why, size, "cannot stat its filesystem");
	/* f_type is signed on some ABIs: the magic numbers are 32 bits. */
	if ((uint32_t)sfs.f_type == (uint32_t)BTRFS_SUPER_MAGIC)
		return btrfs_device(path, dev, why, size);
	/* Anonymous devices are major 0; another is a block device sysfs lacks. */
	if (major(st.st_dev))
		return because(PB_NONE, why, size, "device %u:%u not in /sys/dev/block",
			       major(st.st_dev), minor(st.st_dev));
	name = fs_name((uint32_t)sfs.f_type);
	if (name)
		return because(PB_NONE, why, size, "not a block filesystem: %s", name);
	return because(PB_NONE, why, size, "not a block filesystem: type %#x, device %u:%u",
		       (uint32_t)sfs.f_type, major(st.st_dev), minor(st.st_dev));
}

bool pb_block_device_node(dev_t dev, char *node, size_t size)
{
	char path[64], line[128];
	bool found = false;
	FILE *fp;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major(dev), minor(dev));
	fp = fopen(path, "re");
	if (!fp)
		return false;
	snprintf(node, size, "/dev/block/%u:%u", major(dev), minor(dev));
	while (!found && fgets(line, sizeof(line), fp))
		if (!strncmp(line, "DEVNAME=", 8) && !strchr(line + 8, '/')) {
			line[strcspn(line, "\n")] = 0;
			found = (size_t)snprintf(node, size, "/dev/%s", line + 8) < size;
		}
	fclose(fp);
	return true;
}
