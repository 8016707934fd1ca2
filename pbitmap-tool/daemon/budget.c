// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the machine can spare for a read-ahead: memory pressure (PSI) and
 * the room below the program's cgroup's memory.high.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pbitmapd.h"

/*
 * The start of a small /proc or /sys file, NUL-terminated, in @buf: its
 * length, or -1 when it cannot be read or is empty.
 */
ssize_t read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* "some avg10" of /proc/pressure/memory, in percent; 0 without PSI. */
unsigned int memory_pressure(void)
{
	char buf[128];
	double avg = 0;

	if (read_text("/proc/pressure/memory", buf, sizeof(buf)) < 0)
		return 0;
	if (sscanf(buf, "some avg10=%lf", &avg) != 1)
		return 0;
	return (unsigned int)avg;
}

/* A number from a one-line file ("max": UINT64_MAX), or UINT64_MAX. */
static uint64_t read_u64(const char *path)
{
	char buf[64];

	if (read_text(path, buf, sizeof(buf)) < 0)
		return UINT64_MAX;
	return buf[0] >= '0' && buf[0] <= '9' ? strtoull(buf, NULL, 10) : UINT64_MAX;
}

/*
 * Bytes one exec may read, as the kernel budgets its prefetch: half of
 * what the machine has available, half of the room below memory.high of
 * the program's cgroup (cgroup v2), and the configured bound.
 */
uint64_t exec_budget(pid_t pid)
{
	char path[PATH_MAX], *buf = NULL;
	uint64_t budget = pbd.cfg.budget, high, cur, avail = 0;
	size_t cap = 0;
	FILE *fp = fopen("/proc/meminfo", "re");

	while (fp && getline(&buf, &cap, fp) > 0)
		if (sscanf(buf, "MemAvailable: %" SCNu64 " kB", &avail) == 1)
			break;
	if (fp)
		fclose(fp);
	if (avail && avail << 9 < budget)
		budget = avail << 9;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fp = fopen(path, "re");
	while (fp && getline(&buf, &cap, fp) > 0) {
		if (strncmp(buf, "0::/", 4))
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.high", buf + 3);
		high = read_u64(path);
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.current", buf + 3);
		cur = read_u64(path);
		if (high != UINT64_MAX && cur != UINT64_MAX)
			budget = cur >= high ? 0 : (high - cur) / 2 < budget ? (high - cur) / 2 : budget;
	}
	if (fp)
		fclose(fp);
	free(buf);
	return budget;
}
