// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the paths that write: the fuzzed bytes become a
 * file on tmpfs, and the verbs run on it exactly as the command line runs
 * them (pb_cmd_add() and friends, with their option parsing, the file walk
 * and the messages):
 *
 *   undo -o ORIG FILE     what the file is without a bitmap, if anything
 *   add FILE              stamp (or repair, or leave a stamped file alone)
 *   verify, show --json, digest, set --pages, clear --plane
 *   add -g N -S SHIFT     a re-stamp with another geometry (some inputs)
 *   strip FILE
 *
 * and asserts what pbitmap(1) promises (abort() otherwise, so libFuzzer
 * keeps the input):
 *   - every verb exits 0 or 1, never "usage" or "skipped";
 *   - add failing (exit 1) leaves the file byte-identical;
 *   - add succeeding means undo succeeded before it, verify/show/digest/
 *     set/clear succeed after it, the digest is that of undo's output, and
 *     strip then gives undo's output back byte for byte.
 * The sanitizers (ASan, UBSan) catch the rest.
 *
 * Linked with every module but main.c, cmd-record.c, observe.c, prefetch.c
 * and rpm.c (see the Makefile).  The messages pbitmap prints for rejected
 * inputs go to stderr: run with -close_fd_mask=3, as the Makefile and
 * tests/tool/t-fuzz.sh do, to keep the fuzzer's own output readable (sanitizer reports still
 * appear).
 *
 *   make build/fuzz/fuzz_stamp
 *   build/fuzz/fuzz_stamp -close_fd_mask=3 -max_len=65536 CORPUS pbitmap-tool/fuzz/seeds
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cli.h"
#include "pbitmap.h"
#include "fuzzlib.h"

const char fuzz_name[] = "fuzz_stamp";
static char dir[64], file[96], orig[96];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every verb writes beside or into files in a directory of our own, on tmpfs. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/dev/shm/fuzz_stamp.%d", (int)getpid());
	if (mkdir(dir, 0700) && errno != EEXIST) {
		perror(dir);
		abort();
	}
	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(orig, sizeof(orig), "%s/orig", dir);
	return 0;
}

/* main.c's, for a verb's -h, which no call below passes. */
void pb_print_verb_help(const char *name)
{
	(void)name;
	abort();
}

static bool same(const char *path, const void *data, size_t size)
{
	size_t n = 0;
	unsigned char *buf = slurp(path, &n);
	bool eq = buf && n == size && (size == 0 || !memcmp(buf, data, size));

	free(buf);
	return eq;
}

/*
 * Lowercase hex sha256 of @data, as `pbitmap digest` prints it, by OpenSSL:
 * not by libmd, which computes the digest under test (digest.c).
 */
static void sha256_hex(const void *data, size_t size, char *hex)
{
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	check(EVP_Digest(data, size, sum, &len, EVP_sha256(), NULL), "EVP_Digest");
	for (unsigned int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
}

/* `digest FILE` prints "HEX  FILE": capture it through a file. */
static void check_digest(const void *want_data, size_t want_size)
{
	char out[128], want[2 * EVP_MAX_MD_SIZE + 1], line[512];
	int saved = dup(STDOUT_FILENO), fd;
	FILE *fp;
	int ret;

	snprintf(out, sizeof(out), "%s/digest", dir);
	fflush(stdout);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	check(saved >= 0 && fd >= 0 && dup2(fd, STDOUT_FILENO) >= 0, "redirecting stdout");
	close(fd);
	ret = verb(pb_cmd_digest, "digest", file, NULL);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	check(ret == 0, "digest of a file add stamped failed");
	sha256_hex(want_data, want_size, want);
	fp = fopen(out, "r");
	check(fp && fgets(line, sizeof(line), fp), "no digest output");
	fclose(fp);
	check(!strncmp(line, want, strlen(want)) && line[strlen(want)] == ' ',
	      "digest differs from the sha256 of undo's output");
}

static int exit_code(int ret, const char *what)
{
	if (ret != PB_EXIT_OK && ret != PB_EXIT_FAIL) {
		fprintf(stderr, "fuzz_stamp: %s: exit status %d\n", what, ret);
		abort();
	}
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *original = NULL;
	size_t original_size = 0;
	int undo, add;
	/* The last byte picks a re-stamp geometry for some inputs. */
	unsigned int knob = size ? data[size - 1] : 0;
	char gens[8], shift[8];

	write_file(file, data, size);
	unlink(orig);
	undo = exit_code(verb(pb_cmd_undo, "undo", "-o", orig, file, NULL), "undo");
	if (undo == 0) {
		original = slurp(orig, &original_size);
		check(original != NULL, "undo succeeded but wrote nothing readable");
	}
	check(same(file, data, size), "undo changed the file");

	add = exit_code(verb(pb_cmd_add, "add", file, NULL), "add");
	if (add != 0) {
		check(same(file, data, size), "add failed but changed the file");
		goto out;
	}
	check(undo == 0, "add succeeded on a file whose original undo could not produce");
	check(exit_code(verb(pb_cmd_verify, "verify", "-q", file, NULL), "verify") == 0,
	      "verify failed after add");
	check(exit_code(verb(pb_cmd_show, "show", "--json", file, NULL), "show") == 0,
	      "show failed after add");
	check_digest(original, original_size);
	check(exit_code(verb(pb_cmd_set, "set", "--pages", "0", file, NULL), "set") == 0,
	      "set --pages 0 failed after add");
	check(exit_code(verb(pb_cmd_clear, "clear", "--plane", "0", "--all", file, NULL),
			"clear") == 0, "clear --plane 0 --all failed after add");
	if (knob & 0x80) {
		snprintf(gens, sizeof(gens), "%u", 1 + (knob & 15));
		snprintf(shift, sizeof(shift), "%u", PBITMAP_MIN_PAGE_SHIFT + ((knob >> 4) & 7));
		check(exit_code(verb(pb_cmd_add, "add", "-g", gens, "--page-shift", shift,
				     file, NULL), "re-stamp") == 0, "re-stamp failed");
		check(exit_code(verb(pb_cmd_verify, "verify", "-q", file, NULL), "verify") == 0,
		      "verify failed after a re-stamp");
	}
	check(exit_code(verb(pb_cmd_strip, "strip", file, NULL), "strip") == 0,
	      "strip failed after add");
	check(same(file, original, original_size), "strip did not give undo's output back");
out:
	free(original);
	unlink(file);
	unlink(orig);
	return 0;
}
