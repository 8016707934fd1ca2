// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap show, pbitmap verify: print a bitmap (text or JSON), check it.
 */
#include <endian.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "pbitmap.h"
#include "cli.h"

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Print the runs of @plane as "a-b,c,..." or a JSON array of [first,last]. */
static void print_ranges(const unsigned char *plane, uint64_t nr_pages, bool json,
			 unsigned int limit)
{
	uint64_t first, count, from = 0;
	unsigned int n = 0;

	if (json)
		putchar('[');
	while (pb_next_run(plane, nr_pages, from, &first, &count)) {
		if (!json && limit && n == limit) {
			printf(",...");
			break;
		}
		if (json)
			printf("%s[%" PRIu64 ",%" PRIu64 "]", n ? "," : "", first,
			       first + count - 1);
		else if (count == 1)
			printf("%s%" PRIu64, n ? "," : "", first);
		else
			printf("%s%" PRIu64 "-%" PRIu64, n ? "," : "", first, first + count - 1);
		from = first + count;
		n++;
	}
	if (json)
		putchar(']');
	else if (!n)
		putchar('-');
}

static uint64_t count_runs(const unsigned char *plane, uint64_t nr_pages)
{
	uint64_t first, count, from = 0, n = 0;

	while (pb_next_run(plane, nr_pages, from, &first, &count)) {
		from = first + count;
		n++;
	}
	return n;
}

static void format_time(uint64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm))
		snprintf(buf, size, "never");
	else
		strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* The state of an ELF file's user.pbitmap marker, and what it means. */
static void print_marker(const struct pb_file *f)
{
	printf("  marker       %s", pb_marker_state_name(f->marker));
	switch (f->marker) {
	case PB_MARKER_OK:
		printf(" (" PBITMAP_XATTR_NAME ")\n");
		break;
	case PB_MARKER_STALE:
		printf(" (%s): the kernel will not prefetch it; pbitmap add restores it\n",
		       f->marker_why);
		break;
	case PB_MARKER_MISSING:
		printf(": the kernel will not prefetch it; pbitmap add restores it\n");
		break;
	case PB_MARKER_UNSUPPORTED:
		printf(" (no user extended attributes on this filesystem): the kernel will not "
		       "prefetch it\n");
		break;
	default:
		putchar('\n');
	}
}

/* The inode's generation, as the kernel compares it; 0 where there is none. */
static uint32_t plan_generation(const char *path)
{
	unsigned int gen = 0;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (ioctl(fd, FS_IOC_GETVERSION, &gen))
		gen = 0;
	close(fd);
	return gen;
}

/*
 * The identity of a plan's file against what its path leads to now:
 * "" when the same, else why the kernel would skip it.
 */
static const char *plan_file_state(const struct pbitmap_plan_file *pf, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return "missing";
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_ino != le64toh(pf->ino) ||
	    (uint32_t)st.st_dev != le32toh(pf->dev))
		return "replaced";
	if ((uint64_t)st.st_size != le64toh(pf->size))
		return "size changed";
	if (plan_generation(path) != le32toh(pf->generation))
		return "replaced";
	return "";
}

static uint64_t plan_units(const struct pb_plan_view *v, uint32_t file)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < v->nr_steps; i++)
		if (file == UINT32_MAX || le16toh(v->steps[i].file) == file)
			n += le32toh(v->steps[i].nr);
	return n;
}

/*
 * The order the steps are read in: the order table's as "a-b,c,...", a
 * run of consecutive steps as one item, the first @limit items (0: all).
 */
static void print_order(const struct pb_plan_view *v, unsigned int limit)
{
	unsigned int n = 0;

	if (!v->order) {
		printf("the steps' own (no order table)");
		return;
	}
	printf("by its order table: steps ");
	for (uint32_t i = 0; i < v->nr_steps; n++) {
		uint32_t first = le16toh(v->order[i]), last = first;

		if (limit && n == limit) {
			printf(",...");
			break;
		}
		while (++i < v->nr_steps && le16toh(v->order[i]) == last + 1)
			last++;
		if (first == last)
			printf("%s%u", n ? "," : "", first);
		else
			printf("%s%u-%u", n ? "," : "", first, last);
	}
}

/* A plan's device, (major << 8) | (minor & 0xff) | ((minor & ~0xff) << 12), as "8:17". */
static void format_plan_dev(uint32_t dev, char *buf, size_t size)
{
	snprintf(buf, size, "%u:%u", (dev & 0xfff00) >> 8, (dev & 0xff) | ((dev >> 12) & 0xfff00));
}

static void format_uuid(const uint8_t *u, char *buf, size_t size)
{
	snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

/*
 * Why a kernel would not read the metadata table of @f's plan, of the
 * reasons visible here (docs/FORMAT.md, "Start-up plan"): "" when none.
 * The filesystem's UUID is not compared: the kernel's s_uuid has no
 * portable way out.
 */
static const char *plan_meta_state(const struct pb_file *f, const struct pb_plan_view *v)
{
	uint32_t maj = major(f->st.st_dev), min = minor(f->st.st_dev);
	uint32_t dev = (maj << 8) | (min & 0xff) | ((min & ~0xffU) << 12);

	if (f->st.st_uid)
		return "not read: the executable is not root's";
	if (f->st.st_mode & (S_IWGRP | S_IWOTH))
		return "not read: the executable is writable by group or others";
	if (maj >= 4096 || le32toh(v->meta->dev) != dev)
		return "not read: another filesystem's device";
	return "";
}

static uint64_t meta_units(const struct pb_plan_view *v)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < v->nr_meta; i++)
		n += le32toh(v->meta_ranges[i].nr);
	return n;
}

/*
 * "  metadata     dev 8:17, uuid ..., 37 ranges, 412 KiB, ages 0:30 1:5"
 * (ranges by age, ages without one left out), then with -v each range.
 */
static void show_plan_meta_text(const struct pb_file *f, const struct pb_plan_view *v)
{
	uint32_t ages[PBITMAP_PLAN_META_KEEP + 1] = { 0 };
	const char *state = plan_meta_state(f, v);
	char dev[32], uuid[40];

	for (uint32_t i = 0; i < v->nr_meta; i++)
		ages[v->meta_ranges[i].age]++;	/* checked: at most KEEP */
	format_plan_dev(le32toh(v->meta->dev), dev, sizeof(dev));
	format_uuid(v->meta->uuid, uuid, sizeof(uuid));
	printf("  metadata     dev %s, uuid %s, %u ranges, %" PRIu64 " KiB, ages", dev, uuid,
	       v->nr_meta, meta_units(v) << (PBITMAP_PLAN_UNIT_SHIFT - 10));
	for (unsigned int a = 0; a <= PBITMAP_PLAN_META_KEEP; a++)
		if (ages[a])
			printf(" %u:%u", a, ages[a]);
	printf("%s%s%s\n", *state ? " (" : "", state, *state ? ")" : "");
	for (uint32_t i = 0; pb_verbose && i < v->nr_meta; i++) {
		const struct pbitmap_plan_meta_range *r = &v->meta_ranges[i];
		uint64_t start = le64toh(r->start), nr = le32toh(r->nr);

		printf("  %4u  %7" PRIu64 " KiB  units %" PRIu64, i,
		       nr << (PBITMAP_PLAN_UNIT_SHIFT - 10), start);
		if (nr > 1)
			printf("-%" PRIu64, start + nr - 1);
		printf(", age %u\n", r->age);
	}
}

static void show_plan_text(const struct pb_file *f)
{
	size_t size;
	const unsigned char *area = pb_plan_area(&f->rec, &size);
	struct pb_plan_view v;

	if (!size)
		return;
	if (!pb_plan_read(area, size, &v)) {
		printf("  plan         empty (%zu bytes of room)\n", size);
		return;
	}
	printf("  plan         %u files, %u ranges, %" PRIu64 " KiB; %u of %zu bytes\n",
	       v.nr_files, v.nr_steps, plan_units(&v, UINT32_MAX) << (PBITMAP_PLAN_UNIT_SHIFT - 10),
	       v.used, size);
	printf("  read order   ");
	print_order(&v, pb_verbose ? 0 : 12);
	putchar('\n');
	for (uint32_t i = 0; i < v.nr_files; i++) {
		const char *path = v.names + le32toh(v.files[i].name);
		const char *state = plan_file_state(&v.files[i], path);

		printf("  %4u  %7" PRIu64 " KiB  %s%s%s%s\n", i,
		       plan_units(&v, i) << (PBITMAP_PLAN_UNIT_SHIFT - 10), path,
		       *state ? " (" : "", state, *state ? ")" : "");
	}
	if (v.meta)
		show_plan_meta_text(f, &v);
}

/* ,"meta":{"dev":N,"uuid":"...","ranges":[[start,nr,age],...]} or null */
static void show_plan_meta_json(const struct pb_plan_view *v)
{
	char uuid[40];

	printf(",\"meta\":");
	if (!v->meta) {
		printf("null");
		return;
	}
	format_uuid(v->meta->uuid, uuid, sizeof(uuid));
	printf("{\"dev\":%u,\"uuid\":\"%s\",\"ranges\":[", le32toh(v->meta->dev), uuid);
	for (uint32_t i = 0; i < v->nr_meta; i++)
		printf("%s[%" PRIu64 ",%u,%u]", i ? "," : "",
		       (uint64_t)le64toh(v->meta_ranges[i].start), le32toh(v->meta_ranges[i].nr),
		       v->meta_ranges[i].age);
	printf("]}");
}

static void show_plan_json(const struct pb_file *f)
{
	size_t size;
	const unsigned char *area = pb_plan_area(&f->rec, &size);
	struct pb_plan_view v;

	printf(",\"plan_size\":%zu", size);
	if (!size || !pb_plan_read(area, size, &v))
		return;
	printf(",\"plan\":{\"used\":%u,\"files\":[", v.used);
	for (uint32_t i = 0; i < v.nr_files; i++) {
		const char *path = v.names + le32toh(v.files[i].name);
		const char *state = plan_file_state(&v.files[i], path);

		printf("%s{\"path\":", i ? "," : "");
		json_string(path);
		printf(",\"ino\":%" PRIu64 ",\"size\":%" PRIu64 ",\"dev\":%u"
		       ",\"generation\":%u,\"state\":\"%s\"}",
		       (uint64_t)le64toh(v.files[i].ino), (uint64_t)le64toh(v.files[i].size),
		       le32toh(v.files[i].dev), le32toh(v.files[i].generation),
		       *state ? state : "current");
	}
	printf("],\"steps\":[");
	for (uint32_t i = 0; i < v.nr_steps; i++)
		printf("%s[%u,%u,%u]", i ? "," : "", le16toh(v.steps[i].file),
		       le32toh(v.steps[i].start), le32toh(v.steps[i].nr));
	printf("],\"order\":");
	if (v.order) {
		for (uint32_t i = 0; i < v.nr_steps; i++)
			printf("%s%u", i ? "," : "[", le16toh(v.order[i]));
		printf(v.nr_steps ? "]" : "[]");
	} else {
		printf("null");
	}
	show_plan_meta_json(&v);
	printf("}");
}

static void show_text(const struct pb_file *f, const unsigned char *eff)
{
	const struct pb_record *r = &f->rec;
	const struct pbitmap_header *h = pb_hdr(r);
	uint64_t pages = pb_nr_pages(r), marked = pb_count_bits(eff, pages);
	uint64_t granule = UINT64_C(1) << h->page_shift;
	char when[64], where[128];

	f->store->describe(f, where, sizeof(where));
	printf("%s:\n", f->path);
	printf("  stored in    %s\n", where);
	printf("  content      %" PRIu64 " bytes in %" PRIu64 " pages of %" PRIu64 " bytes\n",
	       (uint64_t)le64toh(h->content_size), pages, granule);
	if (!f->store->in_content && pb_content_size(f) != le64toh(h->content_size))
		printf("  note         the file is now %jd bytes; pages past the stamp are not covered\n",
		       (intmax_t)f->st.st_size);
	if (f->store->has_marker)
		print_marker(f);
	printf("  generations  %u, prefetch when marked in >= %u, newest plane %u\n",
	       h->nr_planes, h->threshold, h->newest_plane);
	format_time(le64toh(h->last_update), when, sizeof(when));
	printf("  runs         %" PRIu64 ", last update %s\n", (uint64_t)le64toh(h->runs), when);
	printf("  learning     %s\n",
	       le32toh(h->flags) & PBITMAP_F_NO_LEARN ? "never (--learn=never)" :
	       le32toh(h->flags) & PBITMAP_F_LEARN_EVERY ? "every run (--learn=every)" :
	       "the owner's runs (--learn=owner)");
	printf("  age  marked  pages\n");
	for (unsigned int age = 0; age < h->nr_planes; age++) {
		const unsigned char *p = pb_plane(r, age);

		printf("  %3u  %6" PRIu64 "  ", age, pb_count_bits(p, pages));
		print_ranges(p, pages, false, pb_verbose ? 0 : 12);
		putchar('\n');
	}
	printf("  prefetch     %" PRIu64 " pages in %" PRIu64 " ranges, %" PRIu64 " bytes: ",
	       marked, count_runs(eff, pages), marked * granule);
	print_ranges(eff, pages, false, pb_verbose ? 0 : 12);
	putchar('\n');
	show_plan_text(f);
}

static void show_json(const struct pb_file *f, const unsigned char *eff)
{
	const struct pb_record *r = &f->rec;
	const struct pbitmap_header *h = pb_hdr(r);
	uint64_t pages = pb_nr_pages(r), marked = pb_count_bits(eff, pages);

	printf("{\"file\":");
	json_string(f->path);
	printf(",\"kind\":\"%s\"", f->store->name);
	if (f->store->record_offset)
		printf(",\"record_offset\":%" PRIu64, f->store->record_offset(f));
	if (f->store->slot) {
		uint64_t slot_offset, section_size;
		int slot = f->store->slot(f, &slot_offset, &section_size);

		printf(",\"section_size\":%" PRIu64 ",\"slot\":%d,\"slot_offset\":%" PRIu64,
		       section_size, slot, slot_offset);
	}
	if (f->store->has_marker)
		printf(",\"marker\":\"%s\"", pb_marker_state_name(f->marker));
	printf(",\"record_size\":%zu,\"content_size\":%" PRIu64 ",\"page_shift\":%u"
	       ",\"page_size\":%" PRIu64 ",\"pages\":%" PRIu64 ",\"generations\":%u"
	       ",\"threshold\":%u,\"newest_plane\":%u,\"runs\":%" PRIu64
	       ",\"last_update\":%" PRIu64 ",\"learn\":%s,\"learn_policy\":\"%s\""
	       ",\"planes\":[",
	       r->size, (uint64_t)le64toh(h->content_size), h->page_shift,
	       UINT64_C(1) << h->page_shift, pages, h->nr_planes, h->threshold,
	       h->newest_plane, (uint64_t)le64toh(h->runs), (uint64_t)le64toh(h->last_update),
	       le32toh(h->flags) & PBITMAP_F_NO_LEARN ? "false" : "true",
	       pb_learn_policy(le32toh(h->flags)));
	for (unsigned int age = 0; age < h->nr_planes; age++) {
		const unsigned char *p = pb_plane(r, age);

		printf("%s{\"age\":%u,\"marked\":%" PRIu64 ",\"ranges\":", age ? "," : "",
		       age, pb_count_bits(p, pages));
		print_ranges(p, pages, true, 0);
		putchar('}');
	}
	printf("],\"prefetch\":{\"pages\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"ranges\":",
	       marked, marked << h->page_shift);
	print_ranges(eff, pages, true, 0);
	putchar('}');
	show_plan_json(f);
	putchar('}');
}

struct show_args {
	bool json;
	unsigned int shown;
};

static int show_one(const char *path, unsigned int flags, void *arg)
{
	struct show_args *a = arg;
	unsigned char *eff;
	struct pb_file f;
	int ret = pb_open_record(&f, path, flags | PB_OPEN_FOLLOW | PB_OPEN_RECHECK);

	if (ret)
		return ret;
	eff = malloc(le32toh(pb_hdr(&f.rec)->plane_size));
	if (!eff) {
		pb_close(&f);
		return pb_error_errno(path, "malloc");
	}
	pb_effective(&f.rec, eff);
	if (a->json) {
		printf("%s\n", a->shown ? "," : "");
		show_json(&f, eff);
	} else {
		show_text(&f, eff);
	}
	a->shown++;
	free(eff);
	pb_close(&f);
	return 0;
}

int pb_cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ 0 }
	};
	struct show_args a = { 0 };
	int c, ret;

	while ((c = pb_getopt(argc, argv, "", opts)) != -1) {
		if (c != 'j')
			return pb_option_exit(c);
		a.json = true;
	}
	if (a.json)
		putchar('[');
	ret = pb_for_each_file(argc, argv, false, 0, show_one, &a);
	if (a.json)
		printf("\n]\n");
	if (pb_flush_stdout())
		return PB_EXIT_FAIL;
	return ret;
}

/* ---- verify ----------------------------------------------------------------- */

/* A valid stamp the kernel cannot find: its marker is missing or wrong. */
static int marker_error(const struct pb_file *f)
{
	switch (f->marker) {
	case PB_MARKER_MISSING:
		return pb_error(f->path, "stamped, but the " PBITMAP_XATTR_NAME " marker is missing "
				"(copied without extended attributes?): the kernel will not prefetch "
				"it; 'pbitmap add %s' restores it", f->path);
	case PB_MARKER_STALE:
		return pb_error(f->path, "stamped, but the " PBITMAP_XATTR_NAME " marker is stale "
				"(%s): the kernel will not prefetch it; 'pbitmap add %s' restores it",
				f->marker_why, f->path);
	case PB_MARKER_UNSUPPORTED:
		return pb_error(f->path, "stamped, but its filesystem does not support user "
				"extended attributes, so it cannot carry the " PBITMAP_XATTR_NAME
				" marker: the kernel will not prefetch it");
	default:
		return pb_error(f->path, "internal error: marker state %s",
				pb_marker_state_name(f->marker));
	}
}

static int verify_one(const char *path, unsigned int flags, void *arg)
{
	struct pb_file f;
	int ret = pb_open_record(&f, path, flags | PB_OPEN_FOLLOW | PB_OPEN_RECHECK);

	(void)arg;
	if (ret)
		return ret;
	if (f.store->has_marker && f.marker != PB_MARKER_OK)
		ret = marker_error(&f);
	if (!ret && !pb_quiet) {
		size_t size;
		const unsigned char *area = pb_plan_area(&f.rec, &size);
		struct pb_plan_view v;
		uint32_t stale = 0;

		printf("%s: OK: %" PRIu64 " pages, %u generations", path,
		       pb_nr_pages(&f.rec), pb_hdr(&f.rec)->nr_planes);
		if (size && pb_plan_read(area, size, &v)) {
			for (uint32_t i = 0; i < v.nr_files; i++)
				stale += !!*plan_file_state(&v.files[i],
							    v.names + le32toh(v.files[i].name));
			printf(", a plan of %u files", v.nr_files);
			if (stale)
				printf(" (%u replaced since: the kernel skips them)", stale);
			if (v.meta)
				printf(", a metadata table of %u ranges", v.nr_meta);
		} else if (size) {
			printf(", an empty plan");
		}
		putchar('\n');
	}
	pb_close(&f);
	return ret;
}

int pb_cmd_verify(int argc, char **argv)
{
	int c, ret;

	if ((c = pb_getopt(argc, argv, "", NULL)) != -1)
		return pb_option_exit(c);
	ret = pb_for_each_file(argc, argv, false, 0, verify_one, NULL);
	if (pb_flush_stdout())
		return PB_EXIT_FAIL;
	return ret;
}
