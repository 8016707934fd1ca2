/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the BPF side of pbitmapd's learning (learn.bpf.c) and its user side
 * (learn.c) share: the events of the ring buffer and the maps' keys.
 */
#ifndef PBITMAPD_LEARN_H
#define PBITMAPD_LEARN_H

#include <linux/types.h>

enum pbd_learn_kind {
	PBD_LEARN_EXEC = 1,	/* a learner's exec: @dev, @ino are the program's */
	PBD_LEARN_FAULT = 2,	/* a learner's page fault on a file mapping */
	PBD_LEARN_EXIT = 3,	/* the learner's thread group leader exited */
	PBD_LEARN_META = 4,	/* a learner's (or its reader child's) look-up of a
				 * block of file-system metadata: @dev is the block
				 * device, @index its first page, @nr its pages */
};

struct pbd_learn_event {
	__u32 kind;
	__u32 tgid;
	__u32 uid;		/* EXEC: real user and group of the exec */
	__u32 gid;
	__u64 dev;		/* the kernel's dev_t (major << 20 | minor) of
				 * the file as stat(2) gives it: on btrfs, its
				 * subvolume's, not the filesystem's */
	__u64 ino;
	__u64 index;		/* FAULT: the page's index in the file */
	__u64 start;		/* EXEC: the process's start (start_boottime, ns) */
	__u64 nr;		/* META: pages from @index */
	__u32 meta_only;	/* EXEC: the program's pbd_learn_who.meta_only */
	__u32 pad;
	__u64 sb_dev;		/* FAULT: the file's filesystem (its superblock's
				 * dev_t), as mountinfo and /proc/PID/maps give it */
};

/* The programs whose runs may be learned (learnable map). */
struct pbd_learn_key {
	__u64 dev;		/* the kernel's dev_t, as stat(2) gives it */
	__u64 ino;
};

struct pbd_learn_who {
	__u32 owner;		/* runs by this real user */
	__u32 anyone;		/* or, when nonzero, by every user */
	__u32 meta_only;	/* nonzero: the patched kernel learns the pages
				 * (vm.pbitmap_learn), so only look-ups are sent */
};

/* A run followed (learners map, by thread group). */
struct pbd_learner {
	__u64 until_ns;		/* its window's end (bpf_ktime_get_ns()) */
	__u32 meta_only;	/* from its program's pbd_learn_who: no faults sent */
	__u32 pad;
};

/* The settings, one element of the config map. */
struct pbd_learn_config {
	__u64 window_ns;	/* a learner's faults count this long after its exec */
};

/* Counters in the stats map. */
enum pbd_learn_stat {
	PBD_STAT_LEARNERS_FULL,	/* an exec not learned: the learners map was full */
	PBD_STAT_EVENTS_LOST,	/* an event the ring buffer had no room for */
	PBD_NR_STATS,
};

#endif
