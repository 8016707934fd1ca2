// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * System-call level help for `pbitmap record` (observe.c):
 *
 *  - which system calls take file pages out of an address space (munmap,
 *    mremap, mmap over an existing mapping, madvise(DONTNEED...), execve):
 *    the tracee is stopped at their entry so that the pages are read from
 *    /proc/PID/pagemap before they are gone; a seccomp filter, installed
 *    in CMD's process before it executes, makes those stops cost nothing
 *    for every other system call;
 *
 *  - turning fault-around off in a traced process.  On a read fault the
 *    kernel also maps the neighbouring pages that are already cached (up
 *    to 64 KiB, fault_around_bytes), so pagemap shows pages the program
 *    never touched; on x86 those entries are even marked young, so no
 *    accessed bit tells them apart.  The kernel skips fault-around in a
 *    mapping registered with a userfaultfd in write-protect mode
 *    (uffd_disable_fault_around()), and since Linux 6.7 the asynchronous
 *    mode (UFFD_FEATURE_WP_ASYNC) accepts any file mapping and resolves
 *    every write fault itself, so the registration changes nothing else
 *    the program can see.  A userfaultfd belongs to the address space of
 *    the process that creates it, so the tracee has to create it: the
 *    tracer makes it run userfaultfd() and close() (at a syscall-exit stop,
 *    through a `syscall` instruction in its vDSO, registers restored
 *    after), takes a copy with pidfd_getfd() and registers the file
 *    mappings itself.  Closing the copy unregisters everything.
 *    x86-64 only; elsewhere record learns with fault-around as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pbitmap.h"

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC	(1 << 15)	/* Linux 6.7 */
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED	24
#endif

/*
 * i386 system call numbers (arch/x86/entry/syscalls/syscall_32.tbl): a
 * 32-bit program's calls, and a 64-bit one's through int 0x80, arrive with
 * AUDIT_ARCH_I386 and these numbers, their arguments in the same places
 * as the x86-64 calls' (mmap2 counts its offset in pages, unused here).
 * The old mmap (90), which takes its arguments from memory, is not
 * followed: glibc uses mmap2.
 */
#define I386_NR_execve		11
#define I386_NR_munmap		91
#define I386_NR_mremap		163
#define I386_NR_mmap2		192
#define I386_NR_madvise		219
#define I386_NR_execveat	358

long pb_syscall_as_native(uint32_t arch, long nr)
{
#if defined(__x86_64__)
	if (arch == AUDIT_ARCH_X86_64)
		return nr;
	if (arch != AUDIT_ARCH_I386)
		return -1;
	switch (nr) {
	case I386_NR_execve:	return SYS_execve;
	case I386_NR_munmap:	return SYS_munmap;
	case I386_NR_mremap:	return SYS_mremap;
	case I386_NR_mmap2:	return SYS_mmap;
	case I386_NR_madvise:	return SYS_madvise;
	case I386_NR_execveat:	return SYS_execveat;
	default:		return -1;
	}
#elif defined(__aarch64__)
	return arch == AUDIT_ARCH_AARCH64 ? nr : -1;	/* 32-bit ARM: not followed */
#else
	(void)arch;
	return nr;
#endif
}

/* errno-style returns of the kernel live in [-4095, -1]. */
#define KERNEL_ERROR(r)		((unsigned long)(r) > -4096UL)

bool pb_drops_pages(long nr, const uint64_t *args, bool file_mmaps)
{
	switch (nr) {
	case SYS_munmap:
	case SYS_mremap:
	case SYS_execve:
	case SYS_execveat:
		return true;
	case SYS_mmap:
		return (args[3] & MAP_FIXED) || (file_mmaps && !(args[3] & MAP_ANONYMOUS));
	case SYS_madvise:
		return args[2] == MADV_DONTNEED || args[2] == MADV_REMOVE ||
		       args[2] == MADV_PAGEOUT || args[2] == MADV_DONTNEED_LOCKED;
	default:
		return false;
	}
}

#ifdef __x86_64__

/* BPF jumps are relative: from instruction @at to @to, 0 for the next one. */
static unsigned char hop(int at, int to)
{
	return to ? (unsigned char)(to - at - 1) : 0;
}

/*
 * Whether this kernel can stop a tracee by seccomp filter (SECCOMP_RET_TRACE):
 * kernels built without CONFIG_SECCOMP_FILTER (small or embedded ones, the
 * test bed's before it had it) cannot, and record then stops at every
 * system call instead, which is slower but learns the same pages.
 */
bool pb_unmap_filter_available(void)
{
	uint32_t action = SECCOMP_RET_TRACE;

	return syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

/*
 * The same predicate as pb_drops_pages(), in classic BPF, for x86-64 and
 * i386 system calls (a 32-bit program's, or int 0x80's): the numbers
 * differ, the arguments tested do not.  Arguments are compared on their
 * low 32 bits (flags and advice values fit).
 */
int pb_install_unmap_filter(bool file_mmaps)
{
	enum { I386 = 9, MMAP = 17, MADVISE = 20, ALLOW = 25, TRACE = 26 };
#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define JUMP(at, op, k, yes, no) \
	BPF_JUMP(BPF_JMP | (op) | BPF_K, (k), hop(at, yes), hop(at, no))
	struct sock_filter insns[] = {
		/*  0 */ LOAD(arch),
		/*  1 */ JUMP(1, BPF_JEQ, AUDIT_ARCH_X86_64, 0, I386),
		/*  2 */ LOAD(nr),
		/*  3 */ JUMP(3, BPF_JEQ, SYS_munmap, TRACE, 0),
		/*  4 */ JUMP(4, BPF_JEQ, SYS_mremap, TRACE, 0),
		/*  5 */ JUMP(5, BPF_JEQ, SYS_execve, TRACE, 0),
		/*  6 */ JUMP(6, BPF_JEQ, SYS_execveat, TRACE, 0),
		/*  7 */ JUMP(7, BPF_JEQ, SYS_mmap, MMAP, 0),
		/*  8 */ JUMP(8, BPF_JEQ, SYS_madvise, MADVISE, ALLOW),
		/*  9 */ JUMP(9, BPF_JEQ, AUDIT_ARCH_I386, 0, ALLOW),
		/* 10 */ LOAD(nr),
		/* 11 */ JUMP(11, BPF_JEQ, I386_NR_munmap, TRACE, 0),
		/* 12 */ JUMP(12, BPF_JEQ, I386_NR_mremap, TRACE, 0),
		/* 13 */ JUMP(13, BPF_JEQ, I386_NR_execve, TRACE, 0),
		/* 14 */ JUMP(14, BPF_JEQ, I386_NR_execveat, TRACE, 0),
		/* 15 */ JUMP(15, BPF_JEQ, I386_NR_mmap2, MMAP, 0),
		/* 16 */ JUMP(16, BPF_JEQ, I386_NR_madvise, MADVISE, ALLOW),
		/* 17 */ LOAD(args[3]),
		/* 18 */ JUMP(18, BPF_JSET, MAP_FIXED, TRACE, 0),
		/* 19 */ JUMP(19, BPF_JSET, MAP_ANONYMOUS, ALLOW, file_mmaps ? TRACE : ALLOW),
		/* 20 */ LOAD(args[2]),
		/* 21 */ JUMP(21, BPF_JEQ, MADV_DONTNEED, TRACE, 0),
		/* 22 */ JUMP(22, BPF_JEQ, MADV_REMOVE, TRACE, 0),
		/* 23 */ JUMP(23, BPF_JEQ, MADV_PAGEOUT, TRACE, 0),
		/* 24 */ JUMP(24, BPF_JEQ, MADV_DONTNEED_LOCKED, TRACE, ALLOW),
		/* 25 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 26 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
	};
#undef LOAD
#undef JUMP
	struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]), .filter = insns };

	if (!syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return 0;
	/* Without CAP_SYS_ADMIN a filter needs no_new_privs; set it only then
	 * (a tracer without privileges keeps set-user-ID from working anyway). */
	if (errno != EACCES || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return PB_FAIL;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) ? PB_FAIL : 0;
}

/* Address of a `syscall` instruction (0f 05) in @tid's vDSO, 0 if none. */
static uint64_t vdso_syscall_insn(pid_t tid)
{
	unsigned long long start = 0, end = 0;
	char path[64], line[512];
	unsigned char buf[8192];
	FILE *maps;
	int mem;
	ssize_t got;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)tid);
	maps = fopen(path, "re");
	if (!maps)
		return 0;
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2)
			break;
	fclose(maps);
	if (!start || end <= start)
		return 0;
	/* The vDSO is no file: reading it marks nothing as used. */
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)tid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (mem < 0)
		return 0;
	got = pread(mem, buf, end - start < sizeof(buf) ? end - start : sizeof(buf), (off_t)start);
	close(mem);
	for (ssize_t i = 0; i + 1 < got; i++)
		if (buf[i] == 0x0f && buf[i + 1] == 0x05)
			return start + (uint64_t)i;
	return 0;
}

enum { INJECT_OK = 0, INJECT_FAILED = -1, INJECT_INTERRUPTED = -2 };

/*
 * Make the stopped @tid run syscall @nr(@a0, @a1, @a2) from @pc; the
 * result in *@ret.  INJECT_INTERRUPTED: it stopped for something else
 * (a signal, a kill), whose waitpid() status is in *@status.
 */
static int inject(pid_t tid, const struct user_regs_struct *saved, uint64_t pc, long nr,
		  uint64_t a0, uint64_t a1, uint64_t a2, long *ret, int *status)
{
	struct user_regs_struct r = *saved;
	struct __ptrace_syscall_info info;

	r.rip = pc;
	r.rax = (unsigned long long)nr;
	r.orig_rax = (unsigned long long)-1;	/* no syscall restart on the way out */
	r.rdi = a0;
	r.rsi = a1;
	r.rdx = a2;
	if (ptrace(PTRACE_SETREGS, tid, NULL, &r))
		return INJECT_FAILED;
	for (int want = PTRACE_SYSCALL_INFO_ENTRY; want <= PTRACE_SYSCALL_INFO_EXIT; want++) {
		if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL))
			return INJECT_FAILED;
		while (waitpid(tid, status, __WALL) < 0)
			if (errno != EINTR)
				return INJECT_FAILED;
		if (!WIFSTOPPED(*status) || WSTOPSIG(*status) != (SIGTRAP | 0x80) ||
		    ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(info), &info) <= 0 ||
		    info.op != want)
			return INJECT_INTERRUPTED;
	}
	*ret = (long)info.exit.rval;
	return INJECT_OK;
}

int pb_tracee_userfaultfd(pid_t tid, pid_t tgid, int *status)
{
	struct user_regs_struct saved;
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC };
	uint64_t pc = vdso_syscall_insn(tid);
	int res, pidfd, uffd = -1;
	long fd, closed;

	if (!pc || ptrace(PTRACE_GETREGS, tid, NULL, &saved))
		return PB_FAIL;
	res = inject(tid, &saved, pc, SYS_userfaultfd,
		     O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY, 0, 0, &fd, status);
	if (res == INJECT_OK && !KERNEL_ERROR(fd)) {
		pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
		if (pidfd >= 0) {
			uffd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0);
			close(pidfd);
		}
		res = inject(tid, &saved, pc, SYS_close, (uint64_t)fd, 0, 0, &closed, status);
	}
	if (res != INJECT_INTERRUPTED || WIFSTOPPED(*status))
		ptrace(PTRACE_SETREGS, tid, NULL, &saved);
	if (uffd >= 0 && (res != INJECT_OK || ioctl(uffd, UFFDIO_API, &api))) {
		close(uffd);
		uffd = -1;
	}
	if (res == INJECT_INTERRUPTED)
		return PB_NONE;
	return uffd >= 0 ? uffd : PB_FAIL;
}

#else /* !__x86_64__ */

int pb_install_unmap_filter(bool file_mmaps)
{
	(void)file_mmaps;
	errno = ENOSYS;
	return PB_FAIL;
}

int pb_tracee_userfaultfd(pid_t tid, pid_t tgid, int *status)
{
	(void)tid;
	(void)tgid;
	(void)status;
	return PB_FAIL;
}

#endif

void pb_uffd_register(int uffd, uint64_t start, uint64_t end)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = end - start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	/* Refused (a mapping the program registered itself, a special
	 * mapping): fault-around stays on there, nothing else changes. */
	ioctl(uffd, UFFDIO_REGISTER, &reg);
}

bool pb_fault_around_can_be_off(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC };
	long ps = sysconf(_SC_PAGESIZE);
	bool ok = false;
	int uffd, fd;
	void *p;

#ifndef __x86_64__
	return false;
#endif
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (uffd < 0)
		return false;
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	p = fd < 0 ? MAP_FAILED : mmap(NULL, (size_t)ps, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p != MAP_FAILED) {
		struct uffdio_register reg = {
			.range = { .start = (uint64_t)(uintptr_t)p, .len = (uint64_t)ps },
			.mode = UFFDIO_REGISTER_MODE_WP,
		};

		ok = !ioctl(uffd, UFFDIO_API, &api) && !ioctl(uffd, UFFDIO_REGISTER, &reg);
		munmap(p, (size_t)ps);
	}
	if (fd >= 0)
		close(fd);
	close(uffd);
	return ok;
}
