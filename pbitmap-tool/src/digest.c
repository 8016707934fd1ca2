// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Digests of a file's original (un-stamped) bytes, with OpenSSL.  Apart from
 * pbfile.c so that the launcher, pbitmap-run, links no libcrypto: its start-up
 * is on the critical path of every program it starts.
 */
#include <stdio.h>

#include <openssl/evp.h>

#include "pbitmap.h"

static int digest_sink(void *ctx, const void *buf, size_t len)
{
	return !EVP_DigestUpdate(ctx, buf, len);
}

int pb_digest_original(struct pb_file *f, const char *algo, char *hex)
{
	const EVP_MD *md = EVP_get_digestbyname(algo);
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *ctx;
	int ret = 0;

	if (!md)
		return pb_error(f->path, "unknown digest algorithm %s", algo);
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return pb_error(f->path, "out of memory");
	if (!EVP_DigestInit_ex(ctx, md, NULL))
		ret = pb_error(f->path, "digest initialisation failed");
	if (!ret)
		ret = pb_read_original(f, digest_sink, ctx);
	if (!ret && !EVP_DigestFinal_ex(ctx, sum, &len))
		ret = pb_error(f->path, "digest failed");
	EVP_MD_CTX_free(ctx);
	for (unsigned int i = 0; !ret && i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	if (!ret)
		hex[2 * len] = '\0';
	return ret;
}
