// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Execs held until their read-ahead is submitted (PBITMAP_DAEMON_HOLD_EXEC_MS).
 *
 * With a notification event the exec goes on while the daemon reads the
 * event, forks and reads the plan, and the program's first faults overtake
 * the plan's reads: in the benchmark most of what separates pbitmapd from
 * the kernel's own plan (docs/bench/2026-11-30-pbitmapd-kernels.md).  A
 * permission event (FAN_OPEN_EXEC_PERM) stops the exec at its open of the
 * program until the group answers; the kernel series submits its batch at
 * the same point.  The daemon answers when the exec's child has exited
 * (it exits once all is submitted: the daemon hears of it from SIGCHLD),
 * or when HOLD_EXEC_MS have passed, whichever is first.  Only the daemon
 * answers: the child, running as the exec's user, never holds the group,
 * and an event's descriptor is closed right after its one answer, so no
 * answer can reach another exec that reuses the number.  An unstamped exec
 * is answered as soon as its attribute has been looked up.
 *
 * The bound holds while the daemon runs: stopped (SIGSTOP), it answers
 * nothing and every exec on a watched filesystem waits; killed, the kernel
 * answers for it (the group is released).  That is why this is off by
 * default (pbitmapd(8)).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "pbitmapd.h"

#define MAX_HELD	MAX_PARALLEL	/* each held exec has a running reader */

static struct held {
	int fd;			/* the event's descriptor, kept until answered; -1: free */
	pid_t child;		/* its read-ahead */
	uint64_t deadline_ms;
} held[MAX_HELD] = { [0 ... MAX_HELD - 1] = { .fd = -1 } };

/* Let the exec of event @fd of group @fan go on. */
void hold_allow(int fan, int fd)
{
	struct fanotify_response r = { .fd = fd, .response = FAN_ALLOW };

	if (write(fan, &r, sizeof(r)) != sizeof(r) && errno != ENOENT && pb_verbose)
		pb_note(NULL, "cannot answer a held exec: %s", strerror(errno));
}

static void release(struct held *h, int fan)
{
	hold_allow(fan, h->fd);
	close(h->fd);
	h->fd = -1;
}

/*
 * Event @fd held while @child reads ahead: answered by hold_reaped() or
 * hold_tick().  Without a free slot, answered now.
 */
void hold_add(int fan, int fd, pid_t child)
{
	for (size_t i = 0; i < MAX_HELD; i++) {
		if (held[i].fd < 0) {
			held[i] = (struct held){ fd, child, now_ms() + pbd.cfg.hold_exec_ms };
			pbd.n.held++;
			return;
		}
	}
	hold_allow(fan, fd);
	close(fd);
}

/* @child ended, its reads submitted: its exec goes on. */
void hold_reaped(int fan, pid_t child)
{
	for (size_t i = 0; i < MAX_HELD; i++)
		if (held[i].fd >= 0 && held[i].child == child)
			release(&held[i], fan);
}

/* Those past their deadline go on (@all: every one, at the daemon's exit). */
void hold_tick(int fan, bool all)
{
	uint64_t now = now_ms();

	for (size_t i = 0; i < MAX_HELD; i++) {
		if (held[i].fd >= 0 && (all || now >= held[i].deadline_ms)) {
			if (!all)
				pbd.n.held_timeout++;
			release(&held[i], fan);
		}
	}
}

/* Milliseconds until the next deadline, for poll(): -1 when none is held. */
int hold_timeout_ms(void)
{
	uint64_t now = now_ms(), next = UINT64_MAX;

	for (size_t i = 0; i < MAX_HELD; i++)
		if (held[i].fd >= 0 && held[i].deadline_ms < next)
			next = held[i].deadline_ms;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)(next - now);
}
