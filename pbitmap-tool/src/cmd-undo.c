// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap undo, pbitmap digest: the original bytes of a stamped file, as
 * they were before the bitmap was added, and their digest.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pbitmap.h"
#include "cli.h"

static int write_sink(void *ctx, const void *buf, size_t len)
{
	FILE *out = ctx;

	return fwrite(buf, 1, len, out) != len;
}

int pb_cmd_undo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ 0 }
	};
	const char *output = NULL;
	FILE *out = stdout;
	struct pb_file f;
	int c, ret;

	while ((c = pb_getopt(argc, argv, "o:", opts)) != -1) {
		if (c != 'o')
			return pb_option_exit(c);
		output = optarg;
	}
	if (optind + 1 != argc)
		return pb_usage_error("undo: exactly one FILE expected");
	if (!output && isatty(STDOUT_FILENO))
		return pb_usage_error("undo: refusing to write binary data to a terminal; "
				   "redirect stdout or use -o");
	if (pb_open(&f, argv[optind], PB_OPEN_FOLLOW))
		return PB_EXIT_FAIL;
	if (output) {
		out = fopen(output, "wbx");
		if (!out) {
			pb_close(&f);
			pb_error_errno(output, "cannot create");
			return PB_EXIT_FAIL;
		}
	}
	ret = pb_read_original(&f, write_sink, out);
	if (ret == 0 && (fflush(out) || ferror(out)))
		ret = pb_error_errno(output ? output : "<stdout>", "write");
	if (output && fclose(out) && !ret)
		ret = pb_error_errno(output, "close");
	if (ret && output)
		unlink(output);
	pb_close(&f);
	return ret ? PB_EXIT_FAIL : PB_EXIT_OK;
}

static int digest_one(const char *path, unsigned int flags, void *arg)
{
	char hex[PB_DIGEST_HEX_MAX];
	struct pb_file f;
	int ret = pb_open(&f, path, flags | PB_OPEN_FOLLOW);

	if (ret)
		return ret;
	ret = pb_digest_original(&f, arg, hex);
	pb_close(&f);
	if (!ret)
		printf("%s  %s\n", hex, path);
	return ret;
}

int pb_cmd_digest(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "algo", required_argument, NULL, 'a' },
		{ 0 }
	};
	static const char *const algos[] = {
		"md5", "sha1", "sha224", "sha256", "sha384", "sha512", NULL
	};
	const char *algo = "sha256";
	int c, ret;
	bool known = false;

	while ((c = pb_getopt(argc, argv, "a:", opts)) != -1) {
		if (c != 'a')
			return pb_option_exit(c);
		algo = optarg;
	}
	for (int i = 0; algos[i]; i++)
		known |= !strcmp(algo, algos[i]);
	if (!known)
		return pb_usage_error("--algo: expected md5, sha1, sha224, sha256, sha384 or sha512");
	ret = pb_for_each_file(argc, argv, false, 0, digest_one, (void *)algo);
	if (pb_flush_stdout())
		return PB_EXIT_FAIL;
	return ret;
}
