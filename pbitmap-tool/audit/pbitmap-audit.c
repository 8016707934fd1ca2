// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pbitmap-audit.so: prefetching from user space, as early as user space
 * can, object by object.  Loaded with LD_AUDIT=PATH/pbitmap-audit.so (make
 * builds it as build/pbitmap-audit.so; it is not installed: it is the
 * benchmark's baseline), ld.so calls la_objopen() for the program, then for
 * every object it maps
 * (each DT_NEEDED library, and later each dlopen()ed module); this module
 * then reads the object's marker (user.pbitmap) and record and asks for
 * readahead of the pages marked in it (pb_willneed(), as `pbitmap
 * prefetch` does), and returns.  It is the baseline the kernel's
 * prefetch at exec and mmap must beat: the answer a reviewer proposes
 * first ("do it in ld.so").
 *
 * What it cannot do, by construction: start before ld.so (ld.so itself,
 * and the program's pages ld.so touches before the first callback, are
 * read on demand); start a library's reads before ld.so has read its ELF
 * header and mapped it (la_objopen() comes after the mapping), so each
 * library's record is read synchronously, one after the other, in the
 * order ld.so loads them; see files mapped with mmap() by the program
 * itself (data files); or help a program started without LD_AUDIT, or a
 * set-id program (ld.so ignores LD_AUDIT paths with a slash in secure mode).
 *
 * It must never break the program it is loaded into: every failure is
 * silent (with PBITMAP_AUDIT_VERBOSE=1, one line on stderr per object),
 * it allocates only while a callback runs and frees it before returning,
 * and it asks ld.so for no symbol binding callbacks (la_objopen returns 0),
 * so the program's calls cost what they cost without it.  Linked with
 * zlib statically (record checksums), no other library.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "pbitmap.h"

static int verbose = -1;

static void say(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const char *path, const char *fmt, ...)
{
	va_list ap;

	if (verbose < 0) {
		const char *v = getenv("PBITMAP_AUDIT_VERBOSE");

		verbose = v && *v == '1';
	}
	if (!verbose)
		return;
	fprintf(stderr, "pbitmap-audit: %s: ", path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void prefetch(const char *path, const char *name)
{
	struct pb_record r = { 0 };
	uint64_t extents = 0, bytes = 0;
	const char *why;
	struct stat st;
	int fd, err;

	/*
	 * Only regular files: stat() first, so that a device is never opened
	 * (an open can have effects), and O_NONBLOCK in case the name was
	 * replaced by a FIFO in between; fstat() below checks again.
	 */
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	why = pb_marker_record(fd, &st, &r);
	if (!why) {
		err = pb_willneed(fd, &r, le64toh(pb_hdr(&r)->content_size), PB_WILLNEED_GAP, 0,
				  &extents, &bytes, NULL);
		if (err)
			why = strerror(err);
	}
	if (why)
		say(name, "not prefetched: %s", why);
	else
		say(name, "%llu extents, %llu bytes", (unsigned long long)extents,
		    (unsigned long long)bytes);
	pb_record_free(&r);
	close(fd);
}

__attribute__((visibility("default")))
unsigned int la_version(unsigned int version)
{
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

__attribute__((visibility("default")))
unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)lmid;
	(void)cookie;
	if (!map->l_name || !*map->l_name) {
		/*
		 * The program: ld.so names it "".  /proc/self/exe is the file
		 * exec'ed; without /proc (a chroot), the name it was exec'ed by.
		 */
		const char *execfn = (const char *)getauxval(AT_EXECFN);

		if (access("/proc/self/exe", F_OK) == 0)
			prefetch("/proc/self/exe", "(program)");
		else if (execfn)
			prefetch(execfn, "(program)");
	} else if (strchr(map->l_name, '/')) {
		prefetch(map->l_name, map->l_name);
	}
	/*
	 * Else a name without a slash: linux-vdso.so.1, which is no file;
	 * opened, it would be a file of that name in the current directory.
	 */
	return 0;
}
