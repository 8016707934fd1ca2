// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `pbitmap plan [--clear] PROGRAM FILE...`: write PROGRAM's start-up
 * plan: the FILEs, in the order given (the order in which the start-up
 * first touches them), each with its identity and the ranges its own
 * bitmap marks, or the whole file when it has no bitmap.  PROGRAM itself
 * is not in it: exec reads PROGRAM's record anyway and prefetches from it,
 * and a plan naming its own file would go stale with every write of it.  PROGRAM
 * must have a plan area (`pbitmap add --plan-size`).  The plan has no order
 * table: the steps' own order, the FILEs', is the order they are read in.
 * The kernel reads the plan at exec and submits every range in one batch
 * (docs/FORMAT.md, "Start-up plan").  The plan is built by planfiles.c,
 * pbitmapd's learning's writer too.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "pbitmap.h"
#include "cli.h"

static int write_plan(const char *program, char **files, int nr, bool clear)
{
	struct pb_plan_src *src = NULL;
	struct pb_plan_stats stats;
	unsigned char *area;
	size_t size, n = (size_t)nr;
	struct pb_file f;
	int ret;

	ret = pb_open_record(&f, program, PB_OPEN_WRITE | PB_OPEN_ELF_ONLY);
	if (ret)
		return ret == PB_NONE ? pb_error(program, "not an ELF file") : ret;
	area = pb_plan_area(&f.rec, &size);
	if (!size) {
		ret = pb_error(program, "no room for a plan: stamp it with "
			       "'pbitmap add --plan-size SIZE %s'", program);
		goto out;
	}
	if (clear) {
		memset(area, 0, size);
		ret = pb_save(&f);
		goto out;
	}
	src = calloc(n, sizeof(*src));
	if (!src) {
		ret = pb_error_errno(program, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		src[i].path = files[i];	/* no ranges: a file without a bitmap, whole */
	ret = pb_plan_fill(&f, src, n, PB_PLAN_RESOLVE, &stats);
	if (!ret)
		ret = pb_save(&f);
	if (!ret && pb_verbose)
		pb_note(program, "plan: %zu files, %zu KiB, %zu of %zu bytes", stats.files,
			stats.units << (PBITMAP_PLAN_UNIT_SHIFT - 10), stats.used, size);
out:
	free(src);
	pb_close(&f);
	return ret;
}

int pb_cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "clear", no_argument, NULL, 'c' },
		{ 0 }
	};
	bool clear = false;
	int c;

	while ((c = pb_getopt(argc, argv, "", opts)) != -1) {
		if (c != 'c')
			return pb_option_exit(c);
		clear = true;
	}
	if (optind >= argc)
		return pb_usage_error("plan: no PROGRAM given");
	if (clear && optind + 1 < argc)
		return pb_usage_error("plan: --clear takes only PROGRAM");
	if (!clear && optind + 1 >= argc)
		return pb_usage_error("plan: no FILE given (--clear empties the plan)");
	if (write_plan(argv[optind], argv + optind + 1, argc - optind - 1, clear))
		return PB_EXIT_FAIL;
	return pb_flush_stdout();
}
