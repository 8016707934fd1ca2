// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Digests of a file's original (un-stamped) bytes, with OpenSSL's libcrypto,
 * loaded with dlopen() by the verbs that need a digest (digest, rpm-verify,
 * export, import, merge of profiles) and only by them.
 *
 * Why not linked: `pbitmap run` starts other programs, and every library
 * the tool itself loads before main() is read from a cold disk ahead of the
 * program it starts.  libcrypto alone is 4.5 MiB, and its relocations touch
 * hundreds of its pages; the verbs that read or write bitmaps need none of
 * it.  (libelf, libzstd and libz are linked statically for the same reason:
 * see the Makefile.)  The static launcher, pbitmap-run, does not include
 * this file at all.
 */
#include <dlfcn.h>
#include <stdio.h>

#include <openssl/evp.h>

#include "pbitmap.h"

#ifndef PB_LIBCRYPTO_SONAME
#define PB_LIBCRYPTO_SONAME "libcrypto.so.3"
#endif

/* The few libcrypto functions the tool calls. */
static struct {
	bool loaded;
	const EVP_MD *(*get_digestbyname)(const char *name);
	EVP_MD_CTX *(*ctx_new)(void);
	void (*ctx_free)(EVP_MD_CTX *ctx);
	int (*init)(EVP_MD_CTX *ctx, const EVP_MD *type, ENGINE *impl);
	int (*update)(EVP_MD_CTX *ctx, const void *d, size_t cnt);
	int (*final)(EVP_MD_CTX *ctx, unsigned char *md, unsigned int *s);
} crypto;

/* Load libcrypto once.  0, or PB_FAIL reported against @path. */
static int load_crypto(const char *path)
{
	void *h;

	if (crypto.loaded)
		return 0;
	h = dlopen(PB_LIBCRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return pb_error(path, "cannot compute a digest: %s (install OpenSSL's libcrypto)",
				dlerror());
	*(void **)&crypto.get_digestbyname = dlsym(h, "EVP_get_digestbyname");
	*(void **)&crypto.ctx_new = dlsym(h, "EVP_MD_CTX_new");
	*(void **)&crypto.ctx_free = dlsym(h, "EVP_MD_CTX_free");
	*(void **)&crypto.init = dlsym(h, "EVP_DigestInit_ex");
	*(void **)&crypto.update = dlsym(h, "EVP_DigestUpdate");
	*(void **)&crypto.final = dlsym(h, "EVP_DigestFinal_ex");
	if (!crypto.get_digestbyname || !crypto.ctx_new || !crypto.ctx_free || !crypto.init ||
	    !crypto.update || !crypto.final) {
		dlclose(h);
		return pb_error(path, "cannot compute a digest: " PB_LIBCRYPTO_SONAME
				" lacks the EVP digest functions");
	}
	crypto.loaded = true;	/* never closed: the process is short */
	return 0;
}

static int digest_sink(void *ctx, const void *buf, size_t len)
{
	return !crypto.update(ctx, buf, len);
}

/* The digest @algo of @buf, or (with @f) of f's original bytes, into @hex. */
static int digest(struct pb_file *f, const char *path, const void *buf, size_t len,
		  const char *algo, char *hex)
{
	const EVP_MD *md;
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *ctx;
	int ret = 0;

	if (load_crypto(path))
		return PB_FAIL;
	md = crypto.get_digestbyname(algo);
	if (!md)
		return pb_error(path, "unknown digest algorithm %s", algo);
	ctx = crypto.ctx_new();
	if (!ctx)
		return pb_error(path, "out of memory");
	if (!crypto.init(ctx, md, NULL))
		ret = pb_error(path, "digest initialisation failed");
	if (!ret && f)
		ret = pb_read_original(f, digest_sink, ctx);
	else if (!ret && !crypto.update(ctx, buf, len))
		ret = pb_error(path, "digest failed");
	if (!ret && !crypto.final(ctx, sum, &n))
		ret = pb_error(path, "digest failed");
	crypto.ctx_free(ctx);
	for (unsigned int i = 0; !ret && i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	if (!ret)
		hex[2 * n] = '\0';
	return ret;
}

int pb_digest_original(struct pb_file *f, const char *algo, char *hex)
{
	return digest(f, f->path, NULL, 0, algo, hex);
}

int pb_digest_buffer(const char *path, const void *buf, size_t len, const char *algo, char *hex)
{
	return digest(NULL, path, buf, len, algo, hex);
}
