// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * packlookup: the benchmark's data-file workload.  Looks objects up in a
 * git pack the way git does, through mappings of the pack index (.idx,
 * version 2) and the pack, and reads each object's data: a program that
 * maps a real data file and reads it sparsely.
 *
 *   packlookup [-n COUNT] [--touched] PACK.idx PACK.pack
 *
 * COUNT object names (default 200) are picked from the index by a fixed
 * multiplicative stride, so the same pack gives the same sample; each is
 * then looked up by name as git's find_pack_entry_one() does (fan-out
 * table, binary search of the sorted names, 32-bit offset or the 64-bit
 * table), its header parsed in the pack and its zlib data inflated from the
 * mapping.  Prints one line per object, "NAME TYPE SIZE" as
 * `git cat-file --batch-check` does for whole objects (deltas print
 * "ofs-delta"/"ref-delta" and the delta's size: they are not resolved),
 * then "inflated BYTES crc32 CRC" over all the data read.  --touched adds
 * the number of distinct 4 KiB pages of each file the lookups read.
 *
 * Every offset is checked against the file sizes: a damaged pack or index
 * is an error (exit 1, "packlookup: FILE: message"), never a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define NAME_LEN 20
#define PAGE 4096

struct mapped {
	const char *path;
	const unsigned char *data;
	size_t size;
	unsigned char *touched;		/* one byte per page, for --touched */
};

static void die(const char *path, const char *msg)
{
	fprintf(stderr, "packlookup: %s: %s\n", path, msg);
	exit(1);
}

static void unmap_file(struct mapped *m)
{
	munmap((void *)m->data, m->size);
	free(m->touched);
}

static void map_file(struct mapped *m, const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	m->path = path;
	if (fd < 0 || fstat(fd, &st) < 0)
		die(path, strerror(errno));
	if (st.st_size == 0)
		die(path, "empty file");
	m->size = (size_t)st.st_size;
	m->data = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m->data == MAP_FAILED)
		die(path, strerror(errno));
	close(fd);
	m->touched = calloc(m->size / PAGE + 1, 1);
	if (!m->touched)
		die(path, "out of memory");
}

/* The bytes [off, off + len) of @m, checked; records the pages read. */
static const unsigned char *at(struct mapped *m, uint64_t off, uint64_t len, const char *what)
{
	char msg[160];

	if (off > m->size || len > m->size - off) {
		snprintf(msg, sizeof(msg), "%s at offset %llu is past the end (%zu bytes)",
			 what, (unsigned long long)off, m->size);
		die(m->path, msg);
	}
	for (uint64_t p = off / PAGE; len && p <= (off + len - 1) / PAGE; p++)
		m->touched[p] = 1;
	return m->data + off;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const unsigned char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

struct index {
	struct mapped file;
	uint32_t count;
	uint64_t names, offsets32, offsets64, nr_large;
};

static void open_index(struct index *idx, const char *path)
{
	const unsigned char *h;
	uint32_t prev = 0;

	map_file(&idx->file, path);
	h = at(&idx->file, 0, 8, "header");
	if (memcmp(h, "\377tOc", 4) || be32(h + 4) != 2)
		die(path, "not a version 2 pack index");
	for (int i = 0; i < 256; i++) {
		uint32_t n = be32(at(&idx->file, 8 + 4 * i, 4, "fan-out table"));

		if (n < prev)
			die(path, "fan-out table is not monotonic");
		prev = n;
	}
	idx->count = prev;
	idx->names = 8 + 1024;
	idx->offsets32 = idx->names + (uint64_t)idx->count * (NAME_LEN + 4);
	idx->offsets64 = idx->offsets32 + (uint64_t)idx->count * 4;
	/* The large-offset table is what lies between the 32-bit table and the
	 * two trailing checksums. */
	if (idx->offsets64 + 2 * NAME_LEN > idx->file.size)
		die(path, "too short for its object count");
	idx->nr_large = (idx->file.size - 2 * NAME_LEN - idx->offsets64) / 8;
	if (!idx->count)
		die(path, "no objects");
}

/* git's find_pack_entry_one(): the position of @name, or -1. */
static int64_t find(struct index *idx, const unsigned char *name)
{
	uint32_t lo = name[0] ? be32(at(&idx->file, 8 + 4 * (name[0] - 1), 4, "fan-out")) : 0;
	uint32_t hi = be32(at(&idx->file, 8 + 4 * name[0], 4, "fan-out"));

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int cmp = memcmp(name, at(&idx->file, idx->names + (uint64_t)mid * NAME_LEN,
					  NAME_LEN, "name table"), NAME_LEN);

		if (!cmp)
			return mid;
		if (cmp < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

static uint64_t offset_of(struct index *idx, uint32_t pos)
{
	uint32_t off = be32(at(&idx->file, idx->offsets32 + 4ull * pos, 4, "offset table"));

	if (!(off & 0x80000000u))
		return off;
	off &= 0x7fffffffu;
	if (off >= idx->nr_large)
		die(idx->file.path, "large offset index out of range");
	return be64(at(&idx->file, idx->offsets64 + 8ull * off, 8, "large offset table"));
}

static const char *const type_names[8] = {
	NULL, "commit", "tree", "blob", "tag", NULL, "ofs-delta", "ref-delta",
};

/* Inflates exactly @size bytes from the pack at @off; folds them into @crc. */
static void inflate_at(struct mapped *pack, uint64_t off, uint64_t size, uLong *crc)
{
	unsigned char out[16384];
	z_stream z = { 0 };
	uint64_t total = 0;
	int ret = Z_OK;

	if (inflateInit(&z) != Z_OK)
		die(pack->path, "zlib initialisation failed");
	while (ret != Z_STREAM_END) {
		/* Feed the mapping a page at a time: only what zlib consumes is read. */
		uint64_t chunk = PAGE - off % PAGE;

		if (off >= pack->size)
			die(pack->path, "object data runs past the end");
		if (chunk > pack->size - off)
			chunk = pack->size - off;
		z.next_in = (Bytef *)at(pack, off, chunk, "object data");
		z.avail_in = (uInt)chunk;
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			ret = inflate(&z, Z_NO_FLUSH);
			if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR)
				die(pack->path, "corrupt object data (zlib)");
			*crc = crc32(*crc, out, (uInt)(sizeof(out) - z.avail_out));
			total += sizeof(out) - z.avail_out;
			if (total > size)
				die(pack->path, "object data longer than its header says");
		} while (z.avail_out == 0 && ret != Z_STREAM_END);
		off += chunk - z.avail_in;
		if (ret == Z_BUF_ERROR && z.avail_in)
			die(pack->path, "corrupt object data (zlib)");
	}
	inflateEnd(&z);
	if (total != size)
		die(pack->path, "object data shorter than its header says");
}

int main(int argc, char **argv)
{
	struct index idx;
	struct mapped pack;
	unsigned long count = 200, touched_idx = 0, touched_pack = 0;
	int touched = 0, argi = 1;
	uint64_t inflated = 0;
	uLong crc = crc32(0, NULL, 0);

	for (; argi < argc && argv[argi][0] == '-'; argi++) {
		if (!strcmp(argv[argi], "-n") && argi + 1 < argc) {
			char *end;

			errno = 0;
			count = strtoul(argv[++argi], &end, 10);
			if (errno || *end || !count || count > 1000000)
				die(argv[argi], "-n wants a count from 1 to 1000000");
		} else if (!strcmp(argv[argi], "--touched")) {
			touched = 1;
		} else if (!strcmp(argv[argi], "--help")) {
			puts("Usage: packlookup [-n COUNT] [--touched] PACK.idx PACK.pack");
			return 0;
		} else {
			fprintf(stderr, "packlookup: unknown option %s\n", argv[argi]);
			return 2;
		}
	}
	if (argc - argi != 2) {
		fputs("Usage: packlookup [-n COUNT] [--touched] PACK.idx PACK.pack\n", stderr);
		return 2;
	}
	open_index(&idx, argv[argi]);
	map_file(&pack, argv[argi + 1]);
	if (memcmp(at(&pack, 0, 12, "header"), "PACK", 4))
		die(pack.path, "not a pack");
	if (be32(pack.data + 8) != idx.count)
		die(pack.path, "object count differs from the index's");

	for (unsigned long k = 0; k < count; k++) {
		/* Knuth's multiplicative hash spreads the picks over the name table. */
		uint32_t pick = (uint32_t)((k * 2654435761ull) % idx.count);
		unsigned char name[NAME_LEN];
		const unsigned char *p;
		uint64_t off, size, hdr = 0;
		unsigned int type, shift = 4;
		int64_t pos;

		memcpy(name, at(&idx.file, idx.names + (uint64_t)pick * NAME_LEN, NAME_LEN,
				"name table"), NAME_LEN);
		pos = find(&idx, name);
		if (pos < 0)
			die(idx.file.path, "a name of the index is not found: names not sorted");
		off = offset_of(&idx, (uint32_t)pos);
		p = at(&pack, off, 1, "object header");
		type = (p[0] >> 4) & 7;
		size = p[0] & 15;
		while (p[hdr] & 0x80) {
			if (++hdr > 9)
				die(pack.path, "object size field too long");
			p = at(&pack, off, hdr + 1, "object header");
			size |= (uint64_t)(p[hdr] & 0x7f) << shift;
			shift += 7;
		}
		off += hdr + 1;
		if (!type_names[type])
			die(pack.path, "unknown object type");
		if (type == 6) {		/* base as a negative offset, git's encoding */
			unsigned int n = 0;

			p = at(&pack, off, 1, "delta base offset");
			while (p[n] & 0x80) {
				if (++n > 9)
					die(pack.path, "delta base offset too long");
				p = at(&pack, off, n + 1, "delta base offset");
			}
			off += n + 1;
		} else if (type == 7) {
			at(&pack, off, NAME_LEN, "delta base name");
			off += NAME_LEN;
		}
		inflate_at(&pack, off, size, &crc);
		inflated += size;
		for (int i = 0; i < NAME_LEN; i++)
			printf("%02x", name[i]);
		printf(" %s %llu\n", type_names[type], (unsigned long long)size);
	}
	printf("inflated %llu crc32 %08lx\n", (unsigned long long)inflated, crc);
	if (touched) {
		for (size_t i = 0; i <= idx.file.size / PAGE; i++)
			touched_idx += idx.file.touched[i];
		for (size_t i = 0; i <= pack.size / PAGE; i++)
			touched_pack += pack.touched[i];
		printf("touched: index %lu of %zu pages, pack %lu of %zu pages\n", touched_idx,
		       (idx.file.size + PAGE - 1) / PAGE, touched_pack, (pack.size + PAGE - 1) / PAGE);
	}
	unmap_file(&idx.file);
	unmap_file(&pack);
	return fflush(stdout) ? 1 : 0;
}
