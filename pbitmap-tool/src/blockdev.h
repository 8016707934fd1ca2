/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The block device a path's filesystem reads from (blockdev.c): the device
 * `pbitmap device-gap` measures, and the one pbitmapd compares the
 * measured device with.  Both must decide alike, or a gap measured at boot
 * would never be used: hence one function for both.
 */
#ifndef PBITMAP_BLOCKDEV_H
#define PBITMAP_BLOCKDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Room for the reason pb_block_device() gives. */
#define PB_BLOCKDEV_WHY	128

/*
 * The block device @path's filesystem reads from, in *@dev: @path's own
 * number if it is a block device; its st_dev where that is a block
 * device's; for btrfs (whose st_dev is an anonymous device of each
 * subvolume), the filesystem's device when it has exactly one.
 * Returns 0; PB_NONE when there is no single one (a btrfs on several
 * devices, a filesystem on none: tmpfs, overlayfs, NFS ...), the reason in
 * @why ("btrfs on 2 devices"); PB_FAIL with errno set when a system call
 * failed, what failed in @why ("cannot stat").  Reports nothing: what
 * follows is the caller's to say.  @why holds @size bytes
 * (PB_BLOCKDEV_WHY is enough).
 */
int pb_block_device(const char *path, dev_t *dev, char *why, size_t size);

/*
 * The device node of block device @dev in @node: /dev/DEVNAME from sysfs
 * (a system without udev's /dev/block links has it), else
 * /dev/block/MAJ:MIN.  False when sysfs knows no such block device.  The
 * caller checks what it opens (st_rdev): a node is only a name.
 */
bool pb_block_device_node(dev_t dev, char *node, size_t size);

#endif
