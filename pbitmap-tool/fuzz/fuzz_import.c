// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for portable profiles (`pbitmap import`, profile.c,
 * anchors.c).  The fuzzed bytes are a profile:
 *
 *   - pb_profile_parse(); a profile that parses is written again with
 *     pb_profile_write() and must parse to the same text (round trip);
 *   - each entry's ranges are carried through its anchors into the anchors
 *     of a real, large ELF file (this fuzzer's own executable, read once):
 *     every range placed must lie within that file;
 *   - `pbitmap import PROFILE FILE` runs as the command line runs it, on a
 *     copy of a small stamped ELF file (the seed elf64-stamped) and on a
 *     stamped data file: it exits 0 or 1, a failed import leaves the file
 *     byte-identical with the same attribute, and a successful one leaves
 *     a bitmap that `verify` accepts.
 *
 * Linked like fuzz_stamp (every module but main.c, cmd-record.c,
 * observe.c, prefetch.c and rpm.c).  Run with -close_fd_mask=3.
 *
 *   make build/fuzz/fuzz_import
 *   build/fuzz/fuzz_import -close_fd_mask=3 -max_len=65536 CORPUS pbitmap-tool/fuzz/seeds
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli.h"
#include "pbitmap.h"
#include "profile.h"
#include "fuzzlib.h"

#ifndef PBITMAP_FUZZ_SEEDS
#error "PBITMAP_FUZZ_SEEDS: the directory of the seeds (the Makefile sets it)"
#endif

const char fuzz_name[] = "fuzz_import";
static char dir[4096], prof[4200], elf_file[4200], data_file[4200];
static unsigned char *elf_seed, *self;
static size_t elf_seed_size, self_size;
static struct pb_anchors self_anchors;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void remove_dir(void)
{
	unlink(prof);
	unlink(elf_file);
	unlink(data_file);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char id[2 * PB_BUILD_ID_MAX + 1];
	/* Not tmpfs: the data file's bitmap needs user attributes. */
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/fuzz_import.%d", tmp && *tmp ? tmp : "/var/tmp",
		 (int)getpid());
	check(!mkdir(dir, 0700) || errno == EEXIST, "mkdir");
	atexit(remove_dir);
	snprintf(prof, sizeof(prof), "%s/profile", dir);
	snprintf(elf_file, sizeof(elf_file), "%s/prog", dir);
	snprintf(data_file, sizeof(data_file), "%s/data", dir);
	elf_seed = slurp(PBITMAP_FUZZ_SEEDS "/elf64-stamped", &elf_seed_size);
	check(elf_seed != NULL, "cannot read the seed " PBITMAP_FUZZ_SEEDS "/elf64-stamped");
	self = slurp("/proc/self/exe", &self_size);
	check(self && !pb_anchors_of(self, self_size, &self_anchors, id),
	      "no anchors in the fuzzer's own executable");
	return 0;
}

void pb_print_verb_help(const char *name)
{
	(void)name;
	abort();
}

/* Parse, write, parse again: the same text both times. */
static void round_trip(const struct pb_profile *p)
{
	char *a = NULL, *b = NULL;
	size_t an = 0, bn = 0;
	struct pb_profile q;
	unsigned long line;
	FILE *fp = open_memstream(&a, &an);

	check(fp && !pb_profile_write(fp, p) && !fclose(fp), "writing a profile");
	check(!pb_profile_parse(a, an, &q, &line), "a written profile does not parse");
	fp = open_memstream(&b, &bn);
	check(fp && !pb_profile_write(fp, &q) && !fclose(fp), "writing a profile again");
	check(an == bn && !memcmp(a, b, an), "a profile changed in a round trip");
	pb_profile_free(&q);
	free(a);
	free(b);
}

static void carry_into_self(const struct pb_profile *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct pb_byte_ranges out[PBITMAP_MAX_PLANES] = { 0 };
		struct pb_carry_stats st = { 0 };

		if (!pb_carry_ranges(&p->v[i].anchors, &self_anchors, p->v[i].gen, p->v[i].nr_gens,
				     self_size, out, &st)) {
			for (unsigned int g = 0; g < p->v[i].nr_gens; g++)
				for (size_t k = 0; k < out[g].n; k++)
					check(out[g].v[k].len && out[g].v[k].start < self_size &&
					      out[g].v[k].len <= self_size - out[g].v[k].start,
					      "a carried range lies outside the file");
		}
		for (unsigned int g = 0; g < PBITMAP_MAX_PLANES; g++)
			pb_byte_ranges_free(&out[g]);
	}
}

/* `import` on @path: 0 or 1; on 1 the file and its attribute are as before. */
static void import_into(const char *path)
{
	unsigned char *before, *after;
	size_t nb = 0, na = 0;
	char xb[65536], xa[65536];
	ssize_t lb, la;
	int ret;

	before = slurp(path, &nb);
	lb = getxattr(path, PBITMAP_XATTR_NAME, xb, sizeof(xb));
	ret = verb(pb_cmd_import, "import", prof, path, NULL);
	check(ret == PB_EXIT_OK || ret == PB_EXIT_FAIL, "import: exit status not 0 or 1");
	if (ret == PB_EXIT_OK) {
		check(verb(pb_cmd_verify, "verify", path, NULL) == PB_EXIT_OK,
		      "verify failed after an import");
	} else {
		after = slurp(path, &na);
		la = getxattr(path, PBITMAP_XATTR_NAME, xa, sizeof(xa));
		check(before && after && na == nb && !memcmp(before, after, nb),
		      "a refused import changed the file");
		check(la == lb && (la <= 0 || !memcmp(xa, xb, (size_t)la)),
		      "a refused import changed the attribute");
		free(after);
	}
	free(before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pb_profile p;
	unsigned long line;
	unsigned char block[20000];

	if (!pb_profile_parse((const char *)data, size, &p, &line)) {
		round_trip(&p);
		carry_into_self(&p);
		pb_profile_free(&p);
	}
	write_file(prof, data, size);
	write_file(elf_file, elf_seed, elf_seed_size);
	import_into(elf_file);
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (unsigned char)(i * 7);
	write_file(data_file, block, sizeof(block));
	check(verb(pb_cmd_add, "add", data_file, NULL) == PB_EXIT_OK,
	      "add on the data file failed (TMPDIR on a filesystem without user xattrs?)");
	import_into(data_file);
	unlink(prof);
	unlink(elf_file);
	unlink(data_file);
	return 0;
}
