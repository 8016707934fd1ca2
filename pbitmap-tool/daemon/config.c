// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmapd's settings: the PBITMAP_DAEMON* lines of /etc/pbitmap.conf.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

#include "pbitmapd.h"

static int config_number(const char *path, unsigned int line, const char *key,
			 const char *val, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || end == val || *end || *val == '-' || v > max)
		return pb_error(path, "line %u: %s: '%s' is not a number from 0 to %" PRIu64,
				line, key, val, max);
	*out = v;
	return 0;
}

static bool config_bool(const char *val, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1", NULL };
	static const char *const no[] = { "no", "false", "off", "0", NULL };

	for (int i = 0; yes[i]; i++) {
		if (!strcasecmp(val, yes[i]) || !strcasecmp(val, no[i])) {
			*out = !strcasecmp(val, yes[i]);
			return true;
		}
	}
	return false;
}

/* The daemon's settings; the trigger's (PBITMAP_RESTAMP ...) are not ours. */
static int config_line(const char *path, unsigned int line, const char *key, const char *val)
{
	uint64_t v;

	if (!strcmp(key, "PBITMAP_DAEMON")) {
		if (!config_bool(val, &pbd.cfg.enabled))
			return pb_error(path, "line %u: %s=%s is not yes or no", line, key, val);
	} else if (!strcmp(key, "PBITMAP_DAEMON_JOIN_GAP_KB")) {
		if (config_number(path, line, key, val, 65536, &v))
			return PB_FAIL;
		pbd.cfg.gap = v << 10;
	} else if (!strcmp(key, "PBITMAP_DAEMON_BUDGET_MB")) {
		if (config_number(path, line, key, val, 65536, &v))
			return PB_FAIL;
		pbd.cfg.budget = v << 20;
	} else if (!strcmp(key, "PBITMAP_DAEMON_PRESSURE_PCT")) {
		if (config_number(path, line, key, val, 100, &v))
			return PB_FAIL;
		pbd.cfg.pressure = (unsigned int)v;
	} else if (!strcmp(key, "PBITMAP_DAEMON_MAX_PARALLEL")) {
		if (config_number(path, line, key, val, 64, &v))
			return PB_FAIL;
		if (!v)
			return pb_error(path, "line %u: %s=0: at least 1", line, key);
		pbd.cfg.children = (unsigned int)v;
	} else if (!strcmp(key, "PBITMAP_DAEMON_LEARN")) {
		if (!strcmp(val, "no"))
			pbd.cfg.learn = PBD_LEARN_NO;
		else if (!strcmp(val, "owner"))
			pbd.cfg.learn = PBD_LEARN_OWNER;
		else if (!strcmp(val, "every"))
			pbd.cfg.learn = PBD_LEARN_EVERY;
		else
			return pb_error(path, "line %u: %s=%s is not no, owner or every",
					line, key, val);
	} else if (!strcmp(key, "PBITMAP_DAEMON_LEARN_INTERVAL_S")) {
		if (config_number(path, line, key, val, 86400, &pbd.cfg.learn_interval_s))
			return PB_FAIL;
	} else if (!strcmp(key, "PBITMAP_DAEMON_LEARN_WINDOW_MS")) {
		if (config_number(path, line, key, val, 600000, &pbd.cfg.learn_window_ms))
			return PB_FAIL;
		if (!pbd.cfg.learn_window_ms)
			return pb_error(path, "line %u: %s=0: at least 1", line, key);
	} else if (!strncmp(key, "PBITMAP_DAEMON", 14)) {
		return pb_error(path, "line %u: unknown setting %s", line, key);
	}
	return 0;
}

/*
 * Ranges closer than this are read as one.  Measured on Debian's kernels
 * (docs/bench/2026-11-29-pbitmapd.md, cold starts on the 150-IOPS disk):
 * on 6.12, 64 KiB (gdb with a plan: 353 read requests against 391 with 256
 * KiB, 597 without the daemon); on 7.3, which reads executables' mappings
 * in large folios of its own, 256 KiB (gdb: 278 against 314 with 64 KiB,
 * 300 without; cc1: 107 against 168, 94 without).  Kernels between are not
 * measured: from 7.0 on, the larger.
 */
static uint64_t default_gap(void)
{
	struct utsname u;

	return uname(&u) == 0 && atoi(u.release) >= 7 ? 256 << 10 : PB_WILLNEED_GAP;
}

/*
 * /etc/pbitmap.conf, the file the package triggers read: NAME=VALUE lines,
 * '#' comments, a value optionally quoted (the triggers' shell reading of
 * it, done the same way).  A missing file is the defaults.
 */
int config_load(const char *path)
{
	char *buf = NULL, *key, *val, *eq;
	unsigned int line = 0;
	size_t cap = 0, n;
	int ret = 0;
	FILE *fp;

	pbd.cfg = (struct config){ .gap = default_gap(), .budget = 256 << 20, .pressure = 10,
				 .children = 4, .learn = PBD_LEARN_OWNER,
				 .learn_interval_s = 60, .learn_window_ms = 10000 };
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? 0 : pb_error_errno(path, "cannot read");
	while (!ret && getline(&buf, &cap, fp) > 0) {
		line++;
		key = buf + strspn(buf, " \t");
		if (*key == '#' || *key == '\n' || !*key)
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			ret = pb_error(path, "line %u: not NAME=VALUE", line);
			break;
		}
		val = eq + 1 + strspn(eq + 1, " \t");
		val[strcspn(val, " \t#\n")] = '\0';
		n = strlen(val);
		if (n >= 2 && (val[0] == '"' || val[0] == '\'') && val[n - 1] == val[0]) {
			val[n - 1] = '\0';
			val++;
		}
		while (eq > key && (eq[-1] == ' ' || eq[-1] == '\t'))
			eq--;
		*eq = '\0';
		ret = config_line(path, line, key, val);
	}
	free(buf);
	fclose(fp);
	return ret;
}
