// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmapd's learning on a stock kernel: which pages of which files a
 * starting program faults in.
 *
 * Three attach points, all present and BTF-typed on every kernel from 6.12
 * on (CO-RE: the structures below are relocated by name at load time, so
 * one object serves 6.12 and 7.x alike):
 *   - sched_process_exec: a program the daemon marked learnable (its
 *     executable's device and inode in @learnable, with the users whose
 *     runs it may learn) makes the task's thread group a learner for
 *     window_ns.  The exec is seen as it happens, in the task's context:
 *     no fault is missed while the daemon is told.
 *   - handle_mm_fault (fentry): every user fault of a learner on a file
 *     mapping gives the file (device, inode) and the page's index in it;
 *     not a meta-only learner's, whose pages the patched kernel learns.
 *     This sees the faults that fault-around resolves from the page cache
 *     as well as the ones that read (the filemap tracepoints see only the
 *     second kind: a page prefetched is mapped without ->fault).
 *   - sched_process_exit: the learner's leader exits; the daemon writes.
 *   - bdev_getblk (fentry, optional): every look-up of a file system's
 *     metadata block in the block device's cache (ext4's directory, inode
 *     table and extent blocks; buffer heads) by a learner, or by the
 *     daemon's reader child serving its exec (@helpers): the blocks its
 *     path look-ups need, cached or not, which the daemon reads in one
 *     batch at the program's next exec (meta.c).  A look-up, not a read:
 *     what the daemon itself read ahead is not taken for a need.  Not
 *     attached where the kernel has no such function (learn.c).
 *
 * What this cannot see, and the kernel series can: a fault maps up to
 * fault_around_bytes (64 KiB) of cached pages around the faulting one,
 * and a page so mapped that the program then touches never faults.  The
 * series turns fault-around off for learners; nothing in a stock kernel
 * does that for another process.  So a learned set here is the pages
 * faulted, a subset of those touched (pbitmapd(8) gives the measured
 * share).
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "learn.h"

/* The fields read, relocated by name against the running kernel's BTF. */
struct super_block {
	__u32 s_dev;
	unsigned long s_magic;
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
} __attribute__((preserve_access_index));

struct block_device {
	__u32 bd_dev;
} __attribute__((preserve_access_index));

struct mm_struct;

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_pgoff;
	struct file *vm_file;
	struct mm_struct *vm_mm;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	struct mm_struct *mm;
	__u64 start_boottime;
} __attribute__((preserve_access_index));

struct linux_binprm {
	struct file *file;
	unsigned int secureexec:1;
} __attribute__((preserve_access_index));

/*
 * btrfs's inode and subvolume, in its module's BTF: stat(2) gives a btrfs
 * file the device of its subvolume (btrfs_getattr(): root->anon_dev), not
 * the filesystem's s_dev, and the daemon names files as stat(2) does.
 * Relocated only where btrfs is there (bpf_core_type_exists()).
 */
struct btrfs_root___pbd {
	__u32 anon_dev;
} __attribute__((preserve_access_index));

struct btrfs_inode___pbd {
	struct btrfs_root___pbd *root;
	struct inode vfs_inode;
} __attribute__((preserve_access_index));

#define BTRFS_SUPER_MAGIC	0x9123683E
#define PAGE_SHIFT	12

char LICENSE[] SEC("license") = "GPL";

/* LRU: a program rewritten by a learned generation leaves its old inode's entry */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct pbd_learn_key);
	__type(value, struct pbd_learn_who);
} learnable SEC(".maps");

/*
 * tgid -> its run (its window's end, whether its faults are wanted).  LRU:
 * an entry whose exit went unseen (its event lost) makes room in time.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct pbd_learner);
} learners SEC(".maps");

/*
 * The daemon's reader child -> the task whose exec it reads ahead for
 * (learn_helper()): its look-ups are that start-up's.  LRU: a child
 * whose entry was not removed (learn_reaped()) makes room in time.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} helpers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pbd_learn_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PBD_NR_STATS);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&stats, &which);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static void emit(const struct pbd_learn_event *e)
{
	if (bpf_ringbuf_output(&events, (void *)e, sizeof(*e), 0))
		count(PBD_STAT_EVENTS_LOST);
}

/*
 * @inode's device and number as stat(2) gives them (learn.h); its
 * filesystem's device into @sb_dev, if not NULL.
 */
static void inode_key(const struct inode *inode, __u64 *dev, __u64 *ino, __u64 *sb_dev)
{
	const struct btrfs_inode___pbd *bi;

	*dev = BPF_CORE_READ(inode, i_sb, s_dev);
	*ino = BPF_CORE_READ(inode, i_ino);
	if (sb_dev)
		*sb_dev = *dev;
	if (bpf_core_type_exists(struct btrfs_inode___pbd) &&
	    BPF_CORE_READ(inode, i_sb, s_magic) == BTRFS_SUPER_MAGIC) {
		bi = (const void *)inode - bpf_core_field_offset(struct btrfs_inode___pbd, vfs_inode);
		*dev = BPF_CORE_READ(bi, root, anon_dev);
	}
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(pbd_exec, struct task_struct *p, int old_pid, struct linux_binprm *bprm)
{
	struct pbd_learn_event e = { .kind = PBD_LEARN_EXEC };
	__u64 ids = bpf_get_current_uid_gid();
	const struct pbd_learn_config *cfg;
	struct pbd_learner run = { 0 };
	struct pbd_learn_key key;
	struct pbd_learn_who *who;
	__u32 tgid = p->tgid, zero = 0;

	inode_key(bprm->file->f_inode, &key.dev, &key.ino, NULL);
	who = bpf_map_lookup_elem(&learnable, &key);
	cfg = bpf_map_lookup_elem(&config, &zero);
	/*
	 * A learner exec'ing another program is that program's learner, or
	 * none.  A secure exec (set-id, file capabilities) is never learned,
	 * as the kernel series never learns one.
	 */
	if (!who || !cfg || (!who->anyone && who->owner != (__u32)ids) ||
	    BPF_CORE_READ_BITFIELD(bprm, secureexec)) {
		bpf_map_delete_elem(&learners, &tgid);
		return 0;
	}
	run.until_ns = bpf_ktime_get_ns() + cfg->window_ns;
	/* read once: user space may update the entry meanwhile */
	run.meta_only = *(volatile __u32 *)&who->meta_only;
	if (bpf_map_update_elem(&learners, &tgid, &run, BPF_ANY)) {
		count(PBD_STAT_LEARNERS_FULL);
		return 0;
	}
	e.tgid = tgid;
	e.uid = (__u32)ids;
	e.gid = (__u32)(ids >> 32);
	e.dev = key.dev;
	e.ino = key.ino;
	e.start = p->start_boottime;
	e.meta_only = run.meta_only;
	emit(&e);
	return 0;
}

SEC("fentry/handle_mm_fault")
int BPF_PROG(pbd_fault, struct vm_area_struct *vma, unsigned long address,
	     unsigned int flags, void *regs)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pbd_learn_event e = { .kind = PBD_LEARN_FAULT };
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct pbd_learner *run;
	struct file *file;

	/* a meta-only run's pages are the patched kernel's to learn */
	run = bpf_map_lookup_elem(&learners, &tgid);
	if (!run || run->meta_only || bpf_ktime_get_ns() > run->until_ns)
		return 0;
	/* another process's memory (ptrace, process_vm_readv) is not its start-up */
	if (vma->vm_mm != task->mm)
		return 0;
	file = vma->vm_file;
	if (!file)
		return 0;
	e.tgid = tgid;
	inode_key(file->f_inode, &e.dev, &e.ino, &e.sb_dev);
	e.index = vma->vm_pgoff + ((address - vma->vm_start) >> PAGE_SHIFT);
	emit(&e);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(pbd_exit, struct task_struct *p)
{
	struct pbd_learn_event e = { .kind = PBD_LEARN_EXIT };
	__u32 tgid = p->tgid;

	if (p->pid != p->tgid || !bpf_map_lookup_elem(&learners, &tgid))
		return 0;
	bpf_map_delete_elem(&learners, &tgid);
	e.tgid = tgid;
	emit(&e);
	return 0;
}

/* The learner a look-up by the current task counts for, or 0. */
static __u32 meta_learner(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, *served;
	struct pbd_learner *run = bpf_map_lookup_elem(&learners, &tgid);

	if (!run) {
		served = bpf_map_lookup_elem(&helpers, &tgid);
		if (!served)
			return 0;
		tgid = *served;
		run = bpf_map_lookup_elem(&learners, &tgid);
	}
	if (!run || bpf_ktime_get_ns() > run->until_ns)
		return 0;
	return tgid;
}

SEC("fentry/bdev_getblk")
int BPF_PROG(pbd_meta, struct block_device *bdev, __u64 block, unsigned int size,
	     unsigned int gfp)
{
	struct pbd_learn_event e = { .kind = PBD_LEARN_META };
	__u64 first, last;

	e.tgid = meta_learner();
	if (!e.tgid || !size)
		return 0;
	first = block * size >> PAGE_SHIFT;
	last = (block * size + size - 1) >> PAGE_SHIFT;
	e.dev = bdev->bd_dev;
	e.index = first;
	e.nr = last - first + 1;
	emit(&e);
	return 0;
}
