// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmapd's settings: the PBITMAP_DAEMON* lines of /etc/pbitmap.conf,
 * and the join gap `pbitmap device-gap --set` measured at boot.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "pbitmapd.h"
#include "blockdev.h"
#include "cli.h"

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

/* A count: @val a number from 1 to @max (0 would mean nothing at all). */
static int config_count(const char *path, unsigned int line, const char *key,
			const char *val, uint64_t max, uint64_t *out)
{
	if (config_number(path, line, key, val, max, out))
		return PB_FAIL;
	if (!*out)
		return pb_error(path, "line %u: %s=0: at least 1", line, key);
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

/* The daemon's settings, in the order --print-config prints them. */
static const char *const setting_names[PBD_SETTINGS] = {
	[PBD_SET_ENABLED] = "PBITMAP_DAEMON",
	[PBD_SET_GAP] = "PBITMAP_DAEMON_JOIN_GAP_KB",
	[PBD_SET_BUDGET] = "PBITMAP_DAEMON_BUDGET_MB",
	[PBD_SET_PRESSURE] = "PBITMAP_DAEMON_PRESSURE_PCT",
	[PBD_SET_CHILDREN] = "PBITMAP_DAEMON_MAX_PARALLEL",
	[PBD_SET_LEARN] = "PBITMAP_DAEMON_LEARN",
	[PBD_SET_LEARN_INTERVAL] = "PBITMAP_DAEMON_LEARN_INTERVAL_S",
	[PBD_SET_LEARN_WINDOW] = "PBITMAP_DAEMON_LEARN_WINDOW_MS",
	[PBD_SET_LEARN_PLANS] = "PBITMAP_DAEMON_LEARN_PLANS",
	[PBD_SET_LEARN_FAULT_AROUND] = "PBITMAP_DAEMON_LEARN_FAULT_AROUND",
	[PBD_SET_HOLD_EXEC] = "PBITMAP_DAEMON_HOLD_EXEC_MS",
	[PBD_SET_READ_PROGRAM] = "PBITMAP_DAEMON_READ_PROGRAM",
	[PBD_SET_READ_LIBRARIES] = "PBITMAP_DAEMON_READ_LIBRARIES",
	[PBD_SET_READ_PLAN] = "PBITMAP_DAEMON_READ_PLAN",
	[PBD_SET_READ_DATA] = "PBITMAP_DAEMON_READ_DATA",
	[PBD_SET_SKIP_CACHED] = "PBITMAP_DAEMON_SKIP_CACHED",
	[PBD_SET_METADATA] = "PBITMAP_DAEMON_METADATA",
	[PBD_SET_CHILD_CPU] = "PBITMAP_DAEMON_CHILD_CPU_S",
};

/* The words of the three-valued settings, in their enums' order. */
static const char *const learn_names[] = {
	[PBD_LEARN_NO] = "no", [PBD_LEARN_OWNER] = "owner", [PBD_LEARN_EVERY] = "every",
};

static const char *const read_names[] = {
	[PBD_READ_AUTO] = "auto", [PBD_READ_YES] = "yes", [PBD_READ_NO] = "no",
};

static const char *const fault_around_names[] = {
	[PBD_FA_KEEP] = "keep", [PBD_FA_WINDOWS] = "windows", [PBD_FA_OFF] = "off",
};

/* @val, one of the three words @names: its index in *@out. */
static int config_word(const char *path, unsigned int line, const char *key, const char *val,
		       const char *const names[3], uint64_t *out)
{
	for (*out = 0; *out < 3; (*out)++)
		if (!strcmp(val, names[*out]))
			return 0;
	return pb_error(path, "line %u: %s=%s is not %s, %s or %s", line, key, val,
			names[0], names[1], names[2]);
}

/* The field of a READ_* setting (@i, one of the four): one rule for all. */
static enum pbd_read *read_setting(unsigned int i)
{
	return i == PBD_SET_READ_PROGRAM ? &pbd.cfg.read_program :
	       i == PBD_SET_READ_LIBRARIES ? &pbd.cfg.read_libraries :
	       i == PBD_SET_READ_PLAN ? &pbd.cfg.read_plan : &pbd.cfg.read_data;
}

/*
 * One NAME=VALUE line: the daemon's settings, each looked up once in
 * setting_names[] and marked as set; the trigger's (PBITMAP_RESTAMP ...)
 * are not ours.
 */
static int config_line(const char *path, unsigned int line, const char *key, const char *val)
{
	unsigned int i;
	uint64_t v;

	for (i = 0; i < PBD_SETTINGS && strcmp(key, setting_names[i]); i++)
		;
	if (i == PBD_SETTINGS)
		return strncmp(key, "PBITMAP_DAEMON", 14) ? 0 :
		       pb_error(path, "line %u: unknown setting %s", line, key);
	switch (i) {
	case PBD_SET_ENABLED:
		if (!config_bool(val, &pbd.cfg.enabled))
			return pb_error(path, "line %u: %s=%s is not yes or no", line, key, val);
		break;
	case PBD_SET_GAP:
		if (config_number(path, line, key, val, 65536, &v))
			return PB_FAIL;
		pbd.cfg.gap = v << 10;
		break;
	case PBD_SET_BUDGET:
		/* not 0: it would read nothing, where a user expects "no limit" */
		if (config_count(path, line, key, val, 65536, &v))
			return PB_FAIL;
		pbd.cfg.budget = v << 20;
		break;
	case PBD_SET_PRESSURE:
		if (config_number(path, line, key, val, 100, &v))
			return PB_FAIL;
		pbd.cfg.pressure = (unsigned int)v;
		break;
	case PBD_SET_CHILDREN:
		if (config_count(path, line, key, val, MAX_PARALLEL, &v))
			return PB_FAIL;
		pbd.cfg.children = (unsigned int)v;
		break;
	case PBD_SET_LEARN:
		if (config_word(path, line, key, val, learn_names, &v))
			return PB_FAIL;
		pbd.cfg.learn = (int)v;
		break;
	case PBD_SET_LEARN_INTERVAL:
		if (config_number(path, line, key, val, 86400, &pbd.cfg.learn_interval_s))
			return PB_FAIL;
		break;
	case PBD_SET_LEARN_WINDOW:
		if (config_count(path, line, key, val, 600000, &pbd.cfg.learn_window_ms))
			return PB_FAIL;
		break;
	case PBD_SET_LEARN_PLANS:
		if (!config_bool(val, &pbd.cfg.learn_plans))
			return pb_error(path, "line %u: %s=%s is not yes or no", line, key, val);
		break;
	case PBD_SET_SKIP_CACHED:
		if (!config_bool(val, &pbd.cfg.skip_cached))
			return pb_error(path, "line %u: %s=%s is not yes or no", line, key, val);
		break;
	case PBD_SET_METADATA:
		pbd.cfg.metadata_auto = !strcasecmp(val, "auto");
		if (!pbd.cfg.metadata_auto && !config_bool(val, &pbd.cfg.metadata))
			return pb_error(path, "line %u: %s=%s is not auto, yes or no", line, key, val);
		pbd.cfg.metadata |= pbd.cfg.metadata_auto;
		break;
	case PBD_SET_LEARN_FAULT_AROUND:
		if (config_word(path, line, key, val, fault_around_names, &v))
			return PB_FAIL;
		pbd.cfg.learn_fault_around = (int)v;
		break;
	case PBD_SET_HOLD_EXEC:
		if (config_number(path, line, key, val, 1000, &pbd.cfg.hold_exec_ms))
			return PB_FAIL;
		break;
	case PBD_SET_READ_PROGRAM:
	case PBD_SET_READ_LIBRARIES:
	case PBD_SET_READ_PLAN:
	case PBD_SET_READ_DATA:
		if (config_word(path, line, key, val, read_names, &v))
			return PB_FAIL;
		*read_setting(i) = (enum pbd_read)v;
		break;
	case PBD_SET_CHILD_CPU:	/* more than the alarm would never be reached */
		if (config_count(path, line, key, val, CHILD_SECONDS, &pbd.cfg.child_cpu_s))
			return PB_FAIL;
		break;
	default:	/* a name in setting_names[] without its case here */
		return pb_error(path, "line %u: %s: not read by this pbitmapd", line, key);
	}
	pbd.cfg.set |= 1u << i;
	return 0;
}

/*
 * Ranges closer than this are read as one: 256 KiB.  Measured on Debian's
 * kernels, cold starts on the 150-IOPS disk: on 7.3, which reads up to
 * 8 MiB from each fault of its own there (read_ahead_kb), 256 KiB against 64
 * (docs/bench/2026-11-29-pbitmapd.md: gdb 278 read requests against 314,
 * cc1 107 against 168); on 6.12, with the sparse bitmaps and the plans
 * pbitmapd learns itself, 256 KiB against 64 and 1024 in `make bench`
 * (docs/bench/2026-11-30-pbitmapd-kernels.md, section 4: read requests
 * gdb 341 against 377 and 376, emacs 522 against 619 and 543, the pack
 * 213 against 276 and 251, python3 102 against 122 and 131; faster in
 * each).  A day earlier, with `pbitmap plan` of bitmaps `pbitmap record`
 * learned (every page touched: fewer, longer runs), 64 KiB had been
 * ahead on 6.12 (gdb 353 against 391): the learner pbitmapd runs is what
 * decides.
 */
static uint64_t default_gap(void)
{
	return 256 << 10;
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
				 .learn_interval_s = 60, .learn_window_ms = 10000,
				 .learn_plans = true, .learn_fault_around = PBD_FA_WINDOWS,
				 .read_plan = PBD_READ_YES, .skip_cached = true,
				 .metadata = true, .metadata_auto = true, .child_cpu_s = CHILD_CPU };
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

/*
 * The gap recorded at boot (pbitmap.h, PB_DEVICE_GAP_FILE): "KIB MAJ:MIN\n",
 * KIB -1 or 0 to PB_DEVICE_GAP_WIDEST_KB (what device-gap writes), nothing
 * else.  Returns true and fills @kb, @dev
 * when the file is well-formed; false when it is absent (silently) or not
 * (a warning).
 */
static bool recorded_gap(const char *path, long long *kb, dev_t *dev)
{
	char buf[64], *p = buf, *end;
	unsigned long long maj, min;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0) {
		if (errno != ENOENT)
			pb_error_errno(path, "cannot read the measured join gap; using the default");
		return false;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		pb_error_errno(path, "cannot read the measured join gap; using the default");
		return false;
	}
	buf[n] = '\0';
	if (!strncmp(p, "-1 ", 3)) {
		*kb = -1;
		p += 3;
	} else if (*p >= '0' && *p <= '9') {
		errno = 0;
		*kb = strtoll(p, &end, 10);
		if (errno || *end != ' ' || *kb > PB_DEVICE_GAP_WIDEST_KB)
			goto bad;
		p = end + 1;
	} else {
		goto bad;
	}
	if (*p < '0' || *p > '9')
		goto bad;
	errno = 0;
	maj = strtoull(p, &end, 10);
	if (errno || *end != ':' || end[1] < '0' || end[1] > '9' || maj > 0xfffff)
		goto bad;
	min = strtoull(end + 1, &end, 10);
	if (errno || strcmp(end, "\n") || min > 0xfffff)
		goto bad;
	*dev = makedev((unsigned int)maj, (unsigned int)min);
	return true;
bad:
	pb_error(path, "malformed (not one line 'KIB MAJ:MIN'); using the default join gap");
	return false;
}

/*
 * The join gap when PBITMAP_DAEMON_JOIN_GAP_KB is not set: the gap
 * `pbitmap device-gap --set` measured at boot on the device of /usr
 * (pbitmap-device-gap.service).  A disk that charges bytes (a cloud
 * volume) pays for every gap byte read: on the benchmark's model of one a
 * request was worth 28-80 KiB, against the default's 256.  A disk that
 * charges requests and not bytes measures up to 1024 (device-gap's widest,
 * PB_DEVICE_GAP_WIDEST_KB, or the device's max_sectors_kb if less).
 * There, against 256, on the 150-IOPS disk with no chunk of a long range
 * dropped (willneed.c), read requests: the git pack 163 against 206 on
 * 6.12 and 172 against 203 on 7.3, python3 97 against 102 on 6.12, gdb
 * 266 against 292 and emacs 333 against 351 on 7.3; 3-5% more for gdb and
 * emacs on 6.12 and python3 on 7.3, their times within each other's
 * spread.  The price is page cache: 1.3-3x what 256 fills (the pack on
 * 6.12 62 MiB against 21), as the kernel's own wide gap costs
 * (docs/bench/2026-11-30-wide-gap-daemon.md).  -1 (a request costs about
 * what the kernel's own model says), a file for another device, or none:
 * the default.
 */
void config_measured_gap(void)
{
	char path[PATH_MAX], why[PB_BLOCKDEV_WHY];
	long long kb;
	dev_t dev, usr;
	int r;

	pbd.cfg.gap_source = pbd.cfg.set & (1u << PBD_SET_GAP) ? PBD_GAP_SETTING : PBD_GAP_DEFAULT;
	if (pbd.cfg.gap_source == PBD_GAP_SETTING)
		return;
	snprintf(path, sizeof(path), "%s/%s", pb_run_dir(), PB_DEVICE_GAP_FILE);
	if (!recorded_gap(path, &kb, &dev))
		return;
	/*
	 * /usr's device as device-gap finds the one it measures (blockdev.c):
	 * on btrfs st_dev is an anonymous device, and only the filesystem's
	 * own device can match what was measured.
	 */
	r = pb_block_device("/usr", &usr, why, sizeof(why));
	if (r == PB_FAIL) {
		pb_error_errno("/usr", "%s; the default join gap", why);
		return;
	}
	if (r == PB_NONE) {
		pb_note(path, "measured on device %u:%u, but /usr is on no single block device"
			" (%s): the default join gap", major(dev), minor(dev), why);
		return;
	}
	if (usr != dev) {
		pb_note(path, "measured on device %u:%u, not /usr's (%u:%u): the default join gap",
			major(dev), minor(dev), major(usr), minor(usr));
		return;
	}
	if (kb >= 0) {
		pbd.cfg.gap = (uint64_t)kb << 10;
		pbd.cfg.gap_source = PBD_GAP_MEASURED;
	}
}

const char *config_gap_source(void)
{
	static const char *const what[] = {
		[PBD_GAP_DEFAULT] = "default",
		[PBD_GAP_SETTING] = "setting",
		[PBD_GAP_MEASURED] = "measured at boot",
	};

	return what[pbd.cfg.gap_source];
}

/* --print-config: each setting as the daemon would run with it. */
int config_print(void)
{
	const struct config *c = &pbd.cfg;

	for (unsigned int i = 0; i < PBD_SETTINGS; i++) {
		const char *source = c->set & (1u << i) ? "setting" : "default";
		char val[32];

		switch (i) {
		case PBD_SET_ENABLED:
			snprintf(val, sizeof(val), "%s", c->enabled ? "yes" : "no");
			break;
		case PBD_SET_GAP:
			snprintf(val, sizeof(val), "%" PRIu64, c->gap >> 10);
			source = config_gap_source();
			break;
		case PBD_SET_BUDGET:
			snprintf(val, sizeof(val), "%" PRIu64, c->budget >> 20);
			break;
		case PBD_SET_PRESSURE:
			snprintf(val, sizeof(val), "%u", c->pressure);
			break;
		case PBD_SET_CHILDREN:
			snprintf(val, sizeof(val), "%u", c->children);
			break;
		case PBD_SET_LEARN:
			snprintf(val, sizeof(val), "%s", learn_names[c->learn]);
			break;
		case PBD_SET_LEARN_INTERVAL:
			snprintf(val, sizeof(val), "%" PRIu64, c->learn_interval_s);
			break;
		case PBD_SET_LEARN_WINDOW:
			snprintf(val, sizeof(val), "%" PRIu64, c->learn_window_ms);
			break;
		case PBD_SET_LEARN_PLANS:
			snprintf(val, sizeof(val), "%s", c->learn_plans ? "yes" : "no");
			break;
		case PBD_SET_SKIP_CACHED:
			snprintf(val, sizeof(val), "%s", c->skip_cached ? "yes" : "no");
			break;
		case PBD_SET_LEARN_FAULT_AROUND:
			snprintf(val, sizeof(val), "%s", fault_around_names[c->learn_fault_around]);
			break;
		case PBD_SET_READ_PROGRAM:
		case PBD_SET_READ_LIBRARIES:
		case PBD_SET_READ_PLAN:
		case PBD_SET_READ_DATA:
			snprintf(val, sizeof(val), "%s", read_names[*read_setting(i)]);
			break;
		case PBD_SET_METADATA:
			snprintf(val, sizeof(val), "%s", c->metadata_auto ? "auto" : c->metadata ? "yes" : "no");
			break;
		case PBD_SET_CHILD_CPU:
			snprintf(val, sizeof(val), "%" PRIu64, c->child_cpu_s);
			break;
		default:
			snprintf(val, sizeof(val), "%" PRIu64, c->hold_exec_ms);
			break;
		}
		printf("%s %s (%s)\n", setting_names[i], val, source);
	}
	return pb_flush_stdout();
}
