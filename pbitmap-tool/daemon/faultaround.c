// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fault-around off while pbitmapd learns (PBITMAP_DAEMON_LEARN_FAULT_AROUND).
 *
 * A page fault on a file mapping maps up to fault_around_bytes (64 KiB) of
 * cached pages around the faulting one; a page so mapped that the program
 * then touches never faults, and a learner that sees faults (learn.bpf.c)
 * never sees it touched.  The patched kernel turns fault-around off for its
 * learners only; a stock kernel has one knob for the whole machine, debugfs's
 * fault_around_bytes.  Set to one page, every page a program touches faults
 * once, and the learned set is what it touched (the benchmark's ground truth
 * is measured the same way).  What it costs every other program meanwhile is
 * minor faults: one per page touched instead of one per 64 KiB (pbitmapd(8)
 * gives the figures).
 *
 * The value found is kept in a file beside the status file before the knob
 * is changed, so that a daemon killed with -9 leaves it to be put back: by
 * the unit's ExecStopPost (pbitmapd --restore-fault-around), or by the next
 * daemon's start.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pbitmapd.h"
#include "cli.h"

#define FAULT_AROUND_KNOB	"/sys/kernel/debug/fault_around_bytes"

static bool fault_around_is_off;
static bool fault_around_warned;

/* Where the value found is kept: "fault-around-bytes" beside the status file. */
static void saved_path(char *out, size_t size)
{
	const char *slash = strrchr(pbd.status_path, '/');
	int dir = slash ? (int)(slash - pbd.status_path) : 1;

	snprintf(out, size, "%.*s/fault-around-bytes", dir, slash ? pbd.status_path : ".");
}

/* A number of bytes from @path (the knob's bound: a page table's span, 2 MiB to 512 MiB). */
static int read_bytes(const char *path, unsigned long *out)
{
	char buf[32], *end;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	buf[n] = '\0';
	errno = 0;
	*out = strtoul(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || *out > (1ul << 30))
		return -EINVAL;
	return 0;
}

static int write_knob(unsigned long bytes)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%lu\n", bytes), fd, err = 0;

	fd = open(FAULT_AROUND_KNOB, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)n) != n)
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/*
 * Put back the value a daemon found, if one is kept (it left the knob
 * changed): 0 when there was nothing to do or it was put back.
 */
int fault_around_restore(void)
{
	char saved[PATH_MAX];
	unsigned long bytes;
	int err;

	saved_path(saved, sizeof(saved));
	err = read_bytes(saved, &bytes);
	if (err == -ENOENT)
		return 0;
	if (err)
		return pb_error(saved, "malformed: %s; fault_around_bytes left as it is",
				strerror(-err));
	err = write_knob(bytes);
	if (err)
		return pb_error(FAULT_AROUND_KNOB, "cannot put back %lu: %s", bytes, strerror(-err));
	unlink(saved);
	return 0;
}

/*
 * Keep @found in @saved, whole or not at all (a temporary file renamed
 * over it).  One already there is a killed daemon's, holding the value to
 * put back: kept when it reads well, else an error (fault-around is then
 * left as it is: a value lost could never be put back).
 */
static int keep_found(const char *saved, unsigned long found)
{
	char buf[32];
	unsigned long kept;
	int n = snprintf(buf, sizeof(buf), "%lu\n", found);

	if (!read_bytes(saved, &kept))
		return 0;
	if (access(saved, F_OK) == 0)
		return -EBADMSG;
	return pb_write_small_file(saved, buf, (size_t)n, 0600, PB_SMALL_FIXED_TMP);
}

/*
 * Fault-around off (one page): the value found is kept first.  A knob that
 * cannot be set (debugfs not mounted, a kernel in lockdown) is said once;
 * learning goes on, seeing faults only.
 */
void fault_around_off(void)
{
	char saved[PATH_MAX];
	unsigned long found;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	if (fault_around_is_off)
		return;
	saved_path(saved, sizeof(saved));
	err = read_bytes(FAULT_AROUND_KNOB, &found);
	if (!err && found != (unsigned long)page)
		err = keep_found(saved, found);
	if (!err)
		err = write_knob((unsigned long)page);
	if (err) {
		if (!fault_around_warned)
			pb_error(FAULT_AROUND_KNOB, "cannot turn fault-around off (%s): learning "
				 "sees faults only", err == -EBADMSG ?
				 "the value kept in fault-around-bytes is malformed" : strerror(-err));
		fault_around_warned = true;
		pbd.fault_around = 2;
		return;
	}
	fault_around_is_off = true;
	pbd.fault_around = 1;
}

/* Fault-around as it was: at the daemon's exit, or as the last window closes. */
void fault_around_on(void)
{
	if (!fault_around_is_off || fault_around_restore())
		return;
	fault_around_is_off = false;
	pbd.fault_around = 0;
}
