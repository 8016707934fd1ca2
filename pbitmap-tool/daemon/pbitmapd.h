/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pbitmapd's parts: main.c (the event loop, the counters), config.c (the
 * settings), marks.c (the filesystems watched), budget.c (what the machine
 * can spare), child.c (one exec's or open's read-ahead, in a child),
 * learn.c and learn.bpf.c (learning), faultaround.c (fault-around off while
 * learning), hold.c (execs held until their read-ahead is submitted),
 * meta.c (the metadata blocks of a start-up's look-ups, in one batch).
 */
#ifndef PBITMAPD_H
#define PBITMAPD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <limits.h>

#include "pbitmap.h"

#ifndef FAN_REPORT_PIDFD
#define FAN_REPORT_PIDFD		0x00000080
#define FAN_EVENT_INFO_TYPE_PIDFD	4
struct fanotify_event_info_pidfd {
	struct fanotify_event_info_header hdr;
	__s32 pidfd;
};
#endif
#ifndef FAN_EPIDFD
#define FAN_EPIDFD	-2	/* the pidfd could not be made */
#endif

#define DEFAULT_CONFIG	"/etc/pbitmap.conf"
#define MAX_LOCAL_FS	256
#define MAX_WALK_DEVS	(2 * MAX_LOCAL_FS)
#define CHILD_SECONDS	10	/* wall-clock bound of one exec's work */
#define CHILD_CPU	2	/* CPU seconds, the same (PBITMAP_DAEMON_CHILD_CPU_S) */
#define READ_ROUNDS	64	/* reads of a group's queue when a child ended (reap()) */
#define DATA_AFTER_EXEC_MS 2000	/* a data child's wait for its opener's exec child */
/*
 * A learning run's writer: a library's record slot is written in place,
 * but a program (and a file that cannot be written in place) is rewritten
 * whole and synced (the tool's publish order), tens of MiB for a large
 * program; on a slow disk that takes more than an exec's bounds.
 */
#define WRITER_SECONDS	120
#define WRITER_CPU	20
/*
 * At SIGTERM, what the children at work are given to end and report
 * (stop()): a reader ends in milliseconds, a writer of a library's slot
 * too; a program rewritten whole on a slow disk may not, and is killed
 * (the file is left as it was).  Well within systemd's 90 s.
 */
#define STOP_WAIT_MS	5000
#define RECENT_SLOTS	64	/* execs remembered to read a file once a second */
#define MAX_PARALLEL	64	/* PBITMAP_DAEMON_MAX_PARALLEL at most */
#define MAX_WRITERS	2	/* learning runs being written at once (learn.c) */
/*
 * The children's table: a slot for each running child (readers, up to
 * MAX_PARALLEL, and writers, up to MAX_WRITERS, which do not wait for a
 * reader's slot) and for each ended one it keeps until the events queued
 * by its end are read (reap(): as many again).  A child without a slot
 * would not be known as the daemon's own, and its opens would start data
 * children.
 */
#define MAX_CHILDREN	(2 * (MAX_PARALLEL + MAX_WRITERS))

/* The settings, as bits of struct config's @set: those the file gave. */
enum {
	PBD_SET_ENABLED, PBD_SET_GAP, PBD_SET_BUDGET, PBD_SET_PRESSURE, PBD_SET_CHILDREN,
	PBD_SET_LEARN, PBD_SET_LEARN_INTERVAL, PBD_SET_LEARN_WINDOW, PBD_SET_LEARN_PLANS,
	PBD_SET_LEARN_FAULT_AROUND, PBD_SET_HOLD_EXEC, PBD_SET_READ_PROGRAM, PBD_SET_READ_LIBRARIES,
	PBD_SET_READ_PLAN, PBD_SET_READ_DATA, PBD_SET_SKIP_CACHED,
	PBD_SET_METADATA, PBD_SET_CHILD_CPU, PBD_SETTINGS
};

struct config {
	unsigned int set;	/* 1 << PBD_SET_*: the settings the file gave */
	bool enabled;		/* PBITMAP_DAEMON=yes */
	uint64_t gap;		/* PBITMAP_DAEMON_JOIN_GAP_KB, in bytes */
	/* where @gap comes from: the default, the setting, or measured at boot */
	enum { PBD_GAP_DEFAULT, PBD_GAP_SETTING, PBD_GAP_MEASURED } gap_source;
	uint64_t budget;	/* PBITMAP_DAEMON_BUDGET_MB: bytes one exec may read at most */
	unsigned int pressure;	/* PBITMAP_DAEMON_PRESSURE_PCT: PSI "some avg10" above which to skip */
	unsigned int children;	/* PBITMAP_DAEMON_MAX_PARALLEL */
	enum { PBD_LEARN_NO, PBD_LEARN_OWNER, PBD_LEARN_EVERY } learn;	/* PBITMAP_DAEMON_LEARN */
	uint64_t learn_interval_s;	/* PBITMAP_DAEMON_LEARN_INTERVAL_S */
	uint64_t learn_window_ms;	/* PBITMAP_DAEMON_LEARN_WINDOW_MS */
	bool learn_plans;		/* PBITMAP_DAEMON_LEARN_PLANS */
	/* PBITMAP_DAEMON_LEARN_FAULT_AROUND: kept, off while a run is followed, off */
	enum { PBD_FA_KEEP, PBD_FA_WINDOWS, PBD_FA_OFF } learn_fault_around;
	uint64_t hold_exec_ms;		/* PBITMAP_DAEMON_HOLD_EXEC_MS: 0, notification events */
	/* PBITMAP_DAEMON_READ_PROGRAM: where the kernel's window is narrower, always, never */
	/* PBITMAP_DAEMON_READ_LIBRARIES, for an exec without a plan, and */
	/* PBITMAP_DAEMON_READ_PLAN, the files of an exec's plan, and */
	/* PBITMAP_DAEMON_READ_DATA, stamped data files, at their open and in a plan */
	enum pbd_read { PBD_READ_AUTO, PBD_READ_YES, PBD_READ_NO } read_program,
		read_libraries, read_plan, read_data;
	bool skip_cached;	/* PBITMAP_DAEMON_SKIP_CACHED: pb_willneed_set_skip_cached() */
	bool metadata;		/* PBITMAP_DAEMON_METADATA: learn and read metadata lists, */
	bool metadata_auto;	/* read only where the join gap is wide (=auto) */
	uint64_t child_cpu_s;	/* PBITMAP_DAEMON_CHILD_CPU_S: an exec's or open's child's CPU limit */
};

/* What the daemon did since it started: the status file, `pbitmap status`. */
struct counters {
	uint64_t execs, unstamped, prefetched, plans, opens, data_prefetched, files, extents, bytes;
	uint64_t cached_bytes;	/* marked bytes left out: cached already (SKIP_CACHED) */
	uint64_t skip_kernel, skip_recent, skip_busy, skip_pressure, skip_gone;
	uint64_t skip_mismatch, skip_fs, skip_denied, skip_budget, skip_failed, killed_stopped;
	uint64_t data_after_exec;	/* data files read after their opener's exec's child */
	uint64_t data_skip_gone;	/* not read: the opener was gone before it was looked at */
	uint64_t queue_overflows;	/* a queue of events overflowed: some dropped, unread */
	uint64_t own_opens;		/* opens by the daemon's own children: not read ahead */
	uint64_t skip_handle;		/* opens whose file could not be opened by its handle */
	uint64_t program_to_kernel;	/* execs whose program's pages were left to the kernel */
	uint64_t libraries_to_kernel;	/* execs without a plan whose libraries were */
	uint64_t plans_to_kernel;	/* execs whose plan's files were */
	uint64_t data_to_kernel;	/* opens of data files, and plans' data files, left */
	uint64_t held, held_timeout;	/* hold.c */
	/*
	 * CPU in microseconds: the daemon's on exec and on open events, its
	 * reaped children's, and of that the part spent in the kernel
	 */
	uint64_t exec_cpu_us, open_cpu_us, child_cpu_us, child_sys_us;
	/* learning (learn.c) */
	uint64_t learners, learn_written, learn_in_place, learn_pages, learn_plans, learn_skip_plan;
	uint64_t learn_skip_recent, learn_skip_policy, learn_skip_changed, learn_skip_failed;
	uint64_t learn_skip_switched, learn_faults;
	uint64_t learn_lost, learn_events_lost, learn_window_ended, learn_skip_partial;
	/* metadata lists (meta.c): written, read at an exec, not read (stale), bytes read */
	uint64_t meta_learned, meta_read, meta_stale, meta_bytes;
};

/* A child's report, one write() (atomic: less than PIPE_BUF). */
struct report {
	int result;		/* 0, PB_NONE: the exec'd file is not what the name leads to */
	bool gone;		/* the process exited before its root was taken:
				 * only the program's own pages were read (a data
				 * file's opener: nothing was) */
	bool data;		/* a data file read ahead at its open (@exe its fstat()), */
	bool after_exec;	/* after its opener's exec's child */
	struct pb_exec_prefetch p;
	bool has_record;	/* an exec: the program's record was read, */
	uint32_t rec_flags;	/* its flags, */
	struct stat exe;	/* and the program's fstat() */
	bool learn;		/* a learning run written: its counters in @n, */
	bool relearn;		/* and the program's new inode, rewritten (@exe), */
	dev_t was_dev;		/* in place of this one */
	ino_t was_ino;
	int meta;		/* an exec: its metadata list read (1), none (0), stale (-1), */
	uint64_t meta_bytes;	/* so many bytes asked for, */
	bool meta_only;		/* and nothing else read: the kernel prefetches */
	struct counters n;
};

struct pbd_state {
	struct config cfg;
	const char *status_path;
	const char *state_dir;	/* --state-dir: the metadata lists (meta.c) */
	dev_t local[MAX_LOCAL_FS];
	/* their WILLNEED chunks, for the children (pb_willneed_use_table()) */
	uint64_t chunks[MAX_LOCAL_FS];
	/* whether their read-ahead window is at least their largest request */
	bool wide[MAX_LOCAL_FS];
	size_t nr_local;
	/*
	 * the devices the children's walks take as local (pb_confine_local()):
	 * those, and the btrfs subvolumes mounted now (marks.c)
	 */
	bool btrfs_watched;	/* a btrfs is among the filesystems watched */
	dev_t walk_devs[MAX_WALK_DEVS];
	size_t nr_walk_devs;
	/*
	 * The filesystems whose opens are watched: the ID their events carry
	 * (@fsid), where their handles are opened (@mnt, a mount of it whose
	 * stat(2) device and statfs(2) ID are @dev and @mnt_fsid: they differ
	 * from the events' on a btrfs subvolume), mountinfo's device, and
	 * the btrfs subvolume mounted (0 elsewhere): a btrfs has an entry for
	 * each subvolume mounted, one fanotify mark for them all.  A root
	 * is opened for open_by_handle_at() only while one buffer of events
	 * is handled (fs_root_open()).
	 */
	struct watched_fs {
		__kernel_fsid_t fsid, mnt_fsid;
		dev_t dev, sb_dev;
		uint64_t subvol;
		unsigned int mount_id;	/* @mnt's, as mountinfo and statx() give it */
		char *mnt;
	} fs[MAX_LOCAL_FS];
	size_t nr_fs;
	struct counters n;
	unsigned int children;
	/* each child and when it started: one that overstays is killed */
	/* @serves: the pid whose exec an exec child reads ahead for, else 0 */
	/* @ended: reaped, kept until the open events queued by then are read */
	struct { pid_t pid, serves; uint64_t deadline_ms; bool ended; } kids[MAX_CHILDREN];
	struct recent { dev_t dev; ino_t ino; time_t when; } recent[RECENT_SLOTS];
	unsigned int recent_next;
	int kernel_fd;		/* /proc/sys/vm/pbitmap_enabled, or -1 */
	int kernel_learn_fd;	/* /proc/sys/vm/pbitmap_learn, or -1 */
	/* learning: 0 off (PBITMAP_DAEMON_LEARN=no), 1 on, 2 not available (BPF) */
	int learning;
	/* fault_around_bytes: 0 as found, 1 one page (faultaround.c), 2 cannot be set */
	int fault_around;
	int own_fds[4];		/* the two groups, the signalfd, the reports' read end */
};
extern struct pbd_state pbd;

uint64_t now_ms(void);

/* config.c */
int config_load(const char *path);
void config_measured_gap(void);		/* the gap device-gap --set recorded */
const char *config_gap_source(void);	/* "default", "setting", "measured at boot" */
int config_print(void);			/* --print-config */

/* marks.c */
bool is_local(dev_t dev);
int mark_local(int fan, int fan_open);
struct file_handle;
uint64_t handle_subvol(const struct file_handle *h);
struct watched_fs *fs_of_event(const __kernel_fsid_t *fsid, uint64_t subvol);
/*
 * A descriptor of the root of watched filesystem @fs, to open its handles
 * on, for the caller to close; -1: no longer mounted there.
 */
int fs_root_open(const struct watched_fs *fs);

/* budget.c */
ssize_t read_text(const char *path, char *buf, size_t size);
unsigned int memory_pressure(void);
uint64_t exec_budget(pid_t pid);

/* child.c */
int task_creds(pid_t pid, uid_t *uid, gid_t *gid, gid_t *groups, int max, int *nr,
	       uint64_t *cap_eff);
const char *under_root(const char *root, const char *path);
int task_path(pid_t pid, int fd, char *out, size_t size);
int drop_privileges(uid_t uid, gid_t gid, const gid_t *groups, int nr, uint32_t keep);
void child_limits(const int *keep, size_t nr_keep, unsigned int seconds, unsigned int cpu);
void __attribute__((noreturn)) child_report(int report_fd, const struct report *r);
int xattr_pages(int fd, struct pb_exec_prefetch *p);
enum pb_leave data_rule(bool held);
void __attribute__((noreturn)) exec_child(int exe_fd, pid_t pid, int pidfd, int report_fd,
					  bool meta_only);
void __attribute__((noreturn)) data_child(int fd, pid_t pid, int opener, int after,
					  int report_fd);

/* main.c */
void kid_started(pid_t pid, unsigned int seconds, pid_t serves);
bool sysctl_on(int fd);	/* killed past seconds + 2 */

/* learn.c: learning on a stock kernel */
int learn_start(int report_fd);		/* the descriptor to poll, or PB_FAIL */
void learn_events(void);		/* read what the BPF side reported */
void learn_tick(void);			/* write the runs whose window ended */
bool learn_pending(void);		/* runs being followed */
void learn_allow(const struct stat *st, uint32_t flags);
bool learn_may_follow(const struct stat *st);
bool learn_knows_btrfs(void);		/* a btrfs mounted now can be learned */
bool learn_reaped(pid_t pid, bool failed);	/* main.c reaped a child: a writer? */
void learn_helper(pid_t child, pid_t serves);	/* @child reads ahead for @serves' exec */

/*
 * meta.c: the metadata lists.  A list, and one learning run's look-ups
 * (learn.c), hold at most META_MAX_PAGES pages: 16 MiB of the device.
 */
#define META_MAX_PAGES	4096
int meta_start(void);
void meta_save(const struct stat *exe, const struct pb_pageset *pages, uint64_t nr);
void meta_moved(dev_t dev, ino_t ino, const struct stat *now);
bool meta_readable(void);
bool meta_listed(const struct stat *exe);
int meta_read(int exe_fd, const struct stat *st, uint64_t gap, uint64_t budget,
	      uint64_t *bytes);

/* hold.c */
void hold_allow(int fan, int fd);
void hold_add(int fan, int fd, pid_t child);
void hold_reaped(int fan, pid_t child);
void hold_tick(int fan, bool all);
int hold_timeout_ms(void);

/* faultaround.c */
void fault_around_off(void);
void fault_around_on(void);
int fault_around_restore(void);

#endif
