// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap status: what prefetches stamped programs on this machine, and
 * what pbitmapd has done since it started (its status file, which it
 * replaces whole after every event: no lock, never half a file).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbitmap.h"
#include "cli.h"


/* What each counter means, in the order pbitmapd writes them. */
static const struct {
	const char *key, *what;
} counters[] = {
	{ "pending", "children at work now: readers for execs and opens, learning writers" },
	{ "execs", "execs seen on the watched filesystems" },
	{ "unstamped", "of which unstamped (one attribute look-up each)" },
	{ "prefetched", "stamped execs read ahead (their own pages, or left to the kernel)" },
	{ "plans", "of which through the program's plan (those left: plans_to_kernel)" },
	{ "opens", "opens seen on the watched filesystems (for data files)" },
	{ "data_prefetched", "data files read ahead at their open" },
	{ "data_after_exec", "data-file reads that first waited for the opener's exec read-ahead" },
	{ "data_skip_gone", "data files not read: the opener was gone before it was looked at" },
	{ "queue_overflows", "times a queue of events overflowed: the dropped ones' files not read ahead" },
	{ "own_opens", "of the opens, the daemon's own readers' and writers': none read ahead" },
	{ "skip_handle", "of the opens, files not opened by their handle (but deleted since)" },
	{ "program_to_kernel", "stamped execs whose program's own pages were left to the kernel" },
	{ "libraries_to_kernel", "execs without a plan whose libraries were left to the kernel" },
	{ "plans_to_kernel", "execs whose plan's files were left to the kernel" },
	{ "data_to_kernel", "opens of data files, and data files in plans, left to the kernel" },
	{ "files", "files read ahead" },
	{ "extents", "ranges requested" },
	{ "bytes", "bytes requested" },
	{ "cached_bytes", "marked bytes not requested: in the page cache already (PBITMAP_DAEMON_SKIP_CACHED)" },
	{ "skip_kernel", "left to the kernel (vm.pbitmap_enabled = 1; metadata lists still read where readable)" },
	{ "skip_recent", "skipped: the same file read ahead in this or the previous second" },
	{ "skip_busy", "skipped: PBITMAP_DAEMON_MAX_PARALLEL children already at work" },
	{ "skip_pressure", "skipped: memory pressure above PBITMAP_DAEMON_PRESSURE_PCT" },
	{ "skip_gone", "of which the program's own pages only (if any): the process was gone" },
	{ "skip_mismatch", "files skipped: the name leads to another file than planned" },
	{ "skip_fs", "files skipped: not on a local filesystem" },
	{ "skip_denied", "files skipped: the program's user, or a data file's opener, may not read them (real user, no capability)" },
	{ "skip_budget", "files skipped: the budget was spent (or memory.high reached)" },
	{ "skip_failed", "execs and opens that failed (fork, the child's limits, a stop, no pidfd)" },
	{ "killed_stopped", "children (readers, writers) their user stopped: killed at once" },
	{ "held", "execs held until their read-ahead was submitted (PBITMAP_DAEMON_HOLD_EXEC_MS)" },
	{ "held_timeout", "of which let go at PBITMAP_DAEMON_HOLD_EXEC_MS, before it was" },
	{ "exec_cpu_us", "CPU microseconds the daemon spent handling exec events" },
	{ "open_cpu_us", "CPU microseconds the daemon spent handling open events" },
	{ "child_cpu_us", "CPU microseconds of its children (readers, writers), once ended" },
	{ "child_sys_us", "of which in the kernel (the page cache work of their reads, say)" },
	{ "learners", "runs of stamped programs followed to learn from" },
	{ "learn_written", "files given a learned generation" },
	{ "learn_in_place", "of which in place (the same inode; the rest by a renamed copy)" },
	{ "learn_pages", "pages marked in those generations" },
	{ "learn_plans", "start-up plans written with a program's generation" },
	{ "learn_skip_plan", "plans not written: none could be built (too large, no file)" },
	{ "learn_skip_recent", "not learned: learned less than PBITMAP_DAEMON_LEARN_INTERVAL_S before" },
	{ "learn_skip_policy", "files not written: their policy does not admit the run" },
	{ "learn_skip_changed", "files not written: renamed, replaced or gone since" },
	{ "learn_skip_failed", "files not written: busy, locked, read-only, or an error" },
	{ "learn_skip_switched", "runs not followed: vm.pbitmap_learn changed since allowed" },
	{ "learn_lost", "runs or files not followed: too many at once, or gone" },
	{ "learn_faults", "faults of followed runs received (none of a run only its list is learned for)" },
	{ "learn_events_lost", "faults the BPF ring buffer had no room for" },
	{ "learn_window_ended", "runs written at their window's end, still running (later faults not learned)" },
	{ "learn_skip_partial", "runs not written: some of their faults dropped (no room), not unused pages" },
	{ "meta_learned", "metadata lists written: the blocks a start-up's look-ups needed" },
	{ "meta_read", "stamped execs whose metadata list was read ahead" },
	{ "meta_stale", "metadata lists not read: not the program's, not one, or no device" },
	{ "meta_bytes", "bytes of metadata requested" },
};

/* A state the status file gives as a number: its line, @what[state]. */
static void print_state(const char *name, const char *const *what, int nr, int state)
{
	printf("%s: %s\n", name, state >= 0 && state < nr ? what[state] : "unknown");
}

/* pbitmapd's learning (learn.c), and fault_around_bytes as it left it (faultaround.c). */
#define STATES(what)	((int)(sizeof(what) / sizeof((what)[0])))
static const char *const learning_states[] = {
	"off (PBITMAP_DAEMON_LEARN=no)",
	"on (BPF: execs and page faults of stamped programs)",
	"not available (its BPF programs did not load: see the daemon's log)",
};
static const char *const fault_around_states[] = {
	"as the kernel has it",
	"off (one page) while pbitmapd learns: every page touched faults",
	"could not be turned off (see the daemon's log): learning sees faults only",
};

/* The kernel's own prefetch: vm.pbitmap_enabled, on a patched kernel. */
static void print_kernel(void)
{
	FILE *fp = fopen("/proc/sys/vm/pbitmap_enabled", "re");
	int on = 0;

	if (!fp) {
		printf("kernel:   no pbitmap support (a stock kernel): pbitmapd prefetches\n");
		return;
	}
	if (fscanf(fp, "%d", &on) != 1)
		on = 0;
	fclose(fp);
	printf("kernel:   vm.pbitmap_enabled = %d (%s)\n", on,
	       on ? "the kernel prefetches; pbitmapd stands aside" : "pbitmapd prefetches");
}

int pb_cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "status", required_argument, NULL, 's' },
		{ 0 }
	};
	const char *path = PB_DAEMON_STATUS;
	char key[64];
	unsigned long long val, pid = 0;
	bool running;
	FILE *fp;
	int c;

	while ((c = pb_getopt(argc, argv, "s:", opts)) != -1) {
		if (c != 's')
			return pb_option_exit(c);
		path = optarg;
	}
	if (optind != argc)
		return pb_usage_error("status: no FILE expected");
	print_kernel();
	fp = fopen(path, "re");
	if (!fp) {
		if (errno == ENOENT)
			pb_error(path, "pbitmapd has not run since boot (no status file)");
		else
			pb_error_errno(path, "cannot read");
		return PB_EXIT_FAIL;
	}
	if (fscanf(fp, "pid %llu", &pid) != 1 || !pid) {
		fclose(fp);
		pb_error(path, "not a pbitmapd status file");
		return PB_EXIT_FAIL;
	}
	running = kill((pid_t)pid, 0) == 0 || errno == EPERM;
	printf("pbitmapd: %s (pid %llu)%s\n", running ? "running" : "not running", pid,
	       running ? "" : "; its last counters:");
	while (fscanf(fp, "%63s %llu", key, &val) == 2) {
		if (!strcmp(key, "learning"))
			print_state("learning", learning_states, STATES(learning_states), (int)val);
		if (!strcmp(key, "fault_around"))
			print_state("fault-around", fault_around_states,
				    STATES(fault_around_states), (int)val);
		for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
			if (!strcmp(key, counters[i].key))
				printf("%14llu  %-18s %s\n", val, key, counters[i].what);
	}
	fclose(fp);
	if (pb_flush_stdout())
		return PB_EXIT_FAIL;
	return running ? PB_EXIT_OK : PB_EXIT_FAIL;
}
