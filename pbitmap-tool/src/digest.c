// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Digests of a file's original (un-stamped) bytes: md5, sha1, sha224,
 * sha256, sha384 and sha512, with libmd (Debian's libmd-dev), linked
 * statically into the tool like libelf, libzstd and libz (see the Makefile).
 *
 * Why libmd: `pbitmap run` starts other programs, and whatever the tool
 * itself loads before main() is read from a cold disk ahead of the program
 * it starts.  libmd's MD5, SHA-1 and SHA-2 are some 14 KiB of code linked
 * in, which only the verbs that digest (digest, rpm-verify, export, import,
 * merge of profiles) touch; OpenSSL's libcrypto, which this file used to
 * load with dlopen(), is a 4.5 MiB shared library, which a static binary
 * cannot dlopen() safely.
 *
 * libmd (1.0.4 in Debian 12) has no SHA-224.  SHA-224 is SHA-256 started
 * from other initial hash values, its result cut to 28 bytes (FIPS 180-4,
 * 5.3.2 and 6.3): sha224_init() gives a SHA-256 context those values and
 * libmd's SHA-256 does the rest.  tests/tool/t-undo-digest.sh checks every
 * algorithm against FIPS 180-4's examples and against coreutils.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <md5.h>
#include <sha1.h>
#include <sha2.h>

#include "pbitmap.h"

union md_ctx {
	MD5_CTX md5;
	SHA1_CTX sha1;
	SHA2_CTX sha2;
};

/* The largest digest, SHA-512's; PB_DIGEST_HEX_MAX holds its hex. */
#define MD_MAX	SHA512_DIGEST_LENGTH
_Static_assert(PB_DIGEST_HEX_MAX >= 2 * MD_MAX + 1, "PB_DIGEST_HEX_MAX too small");

static void md5_init(union md_ctx *c) { MD5Init(&c->md5); }
static void md5_update(union md_ctx *c, const void *p, size_t n) { MD5Update(&c->md5, p, n); }
static void md5_final(union md_ctx *c, uint8_t *out) { MD5Final(out, &c->md5); }
static void sha1_init(union md_ctx *c) { SHA1Init(&c->sha1); }
static void sha1_update(union md_ctx *c, const void *p, size_t n) { SHA1Update(&c->sha1, p, n); }
static void sha1_final(union md_ctx *c, uint8_t *out) { SHA1Final(out, &c->sha1); }

/* SHA-224: SHA-256 from these initial hash values (FIPS 180-4, 5.3.2). */
static void sha224_init(union md_ctx *c)
{
	static const uint32_t h0[8] = {
		0xc1059ed8, 0x367cd507, 0x3070dd17, 0xf70e5939,
		0xffc00b31, 0x68581511, 0x64f98fa7, 0xbefa4fa4,
	};

	SHA256Init(&c->sha2);
	memcpy(c->sha2.state.st32, h0, sizeof(h0));
}

static void sha256_init(union md_ctx *c) { SHA256Init(&c->sha2); }
static void sha256_update(union md_ctx *c, const void *p, size_t n) { SHA256Update(&c->sha2, p, n); }
/* SHA-224 too: its digest is the first 28 of these 32 bytes. */
static void sha256_final(union md_ctx *c, uint8_t *out) { SHA256Final(out, &c->sha2); }
static void sha384_init(union md_ctx *c) { SHA384Init(&c->sha2); }
static void sha384_update(union md_ctx *c, const void *p, size_t n) { SHA384Update(&c->sha2, p, n); }
static void sha384_final(union md_ctx *c, uint8_t *out) { SHA384Final(out, &c->sha2); }
static void sha512_init(union md_ctx *c) { SHA512Init(&c->sha2); }
static void sha512_update(union md_ctx *c, const void *p, size_t n) { SHA512Update(&c->sha2, p, n); }
static void sha512_final(union md_ctx *c, uint8_t *out) { SHA512Final(out, &c->sha2); }

static const struct md {
	const char *name;
	size_t len;		/* bytes of the digest */
	void (*init)(union md_ctx *c);
	void (*update)(union md_ctx *c, const void *buf, size_t len);
	void (*final)(union md_ctx *c, uint8_t out[MD_MAX]);
} mds[] = {
	{ "md5", MD5_DIGEST_LENGTH, md5_init, md5_update, md5_final },
	{ "sha1", SHA1_DIGEST_LENGTH, sha1_init, sha1_update, sha1_final },
	{ "sha224", 28, sha224_init, sha256_update, sha256_final },
	{ "sha256", SHA256_DIGEST_LENGTH, sha256_init, sha256_update, sha256_final },
	{ "sha384", SHA384_DIGEST_LENGTH, sha384_init, sha384_update, sha384_final },
	{ "sha512", SHA512_DIGEST_LENGTH, sha512_init, sha512_update, sha512_final },
};

struct sink {
	const struct md *md;
	union md_ctx ctx;
};

static int digest_sink(void *arg, const void *buf, size_t len)
{
	struct sink *s = arg;

	s->md->update(&s->ctx, buf, len);
	return 0;
}

/* The digest @algo of @buf, or (with @f) of f's original bytes, into @hex. */
static int digest(struct pb_file *f, const char *path, const void *buf, size_t len,
		  const char *algo, char *hex)
{
	struct sink s = { .md = NULL };
	uint8_t sum[MD_MAX];
	int ret = 0;

	for (size_t i = 0; i < sizeof(mds) / sizeof(mds[0]); i++)
		if (!strcmp(algo, mds[i].name))
			s.md = &mds[i];
	if (!s.md)
		return pb_error(path, "unknown digest algorithm %s", algo);
	s.md->init(&s.ctx);
	if (f)
		ret = pb_read_original(f, digest_sink, &s);
	else
		s.md->update(&s.ctx, buf, len);
	s.md->final(&s.ctx, sum);
	if (ret)
		return ret;
	for (size_t i = 0; i < s.md->len; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	hex[2 * s.md->len] = '\0';
	return 0;
}

int pb_digest_original(struct pb_file *f, const char *algo, char *hex)
{
	return digest(f, f->path, NULL, 0, algo, hex);
}

int pb_digest_buffer(const char *path, const void *buf, size_t len, const char *algo, char *hex)
{
	return digest(NULL, path, buf, len, algo, hex);
}
