// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * landlock-exec: run a command confined by a Landlock ruleset that
 * handles writing files and grants it nowhere, for t-learn-rules: a
 * learner that may not write its own file.
 *
 *   landlock-exec CMD [ARG...]
 *
 * Exits 1 with a message when the kernel has no Landlock (ENOSYS,
 * EOPNOTSUPP): the test then fails, it never runs unconfined.
 */
#define _GNU_SOURCE
#include <linux/landlock.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct landlock_ruleset_attr attr = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE,
	};
	long fd;

	if (argc < 2) {
		fprintf(stderr, "usage: landlock-exec CMD [ARG...]\n");
		return 2;
	}
	fd = syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (fd < 0) {
		perror("landlock-exec: landlock_create_ruleset");
		return 1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		perror("landlock-exec: PR_SET_NO_NEW_PRIVS");
		return 1;
	}
	if (syscall(__NR_landlock_restrict_self, fd, 0)) {
		perror("landlock-exec: landlock_restrict_self");
		return 1;
	}
	close((int)fd);
	execvp(argv[1], argv + 1);
	perror("landlock-exec: exec");
	return 127;
}
