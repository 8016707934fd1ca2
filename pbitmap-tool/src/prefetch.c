// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `pbitmap prefetch` and `pbitmap run`: the user-space baseline.
 *
 * Prefetching asks the kernel for asynchronous readahead of every range
 * marked in a file's bitmap (posix_fadvise(POSIX_FADV_WILLNEED)); nothing
 * here waits for the I/O.  `run` does that for a command and every object
 * the dynamic loader is going to map for it, found the way ld.so finds
 * them, and then executes the command while the reads are in flight.
 *
 * Each object is prefetched before its dynamic section is read, so the
 * few synchronous reads this needs overlap the readahead already issued.
 *
 * The lookup is ld.so's own, done here (DT_RPATH, LD_LIBRARY_PATH,
 * DT_RUNPATH, /etc/ld.so.cache, the default directories, glibc-hwcaps
 * subdirectories), not asked of ldd: ldd runs the loader, which maps every
 * library, reading synchronously the very pages the prefetch is meant to
 * request ahead in one go, and it runs the program's own interpreter.
 */
#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "pbitmap.h"
#include "cli.h"

/* ---- prefetching one file ------------------------------------------------ */

int pb_prefetch_file(struct pb_file *f, uint64_t gap, uint64_t limit, uint64_t *extents,
		     uint64_t *bytes)
{
	int err;

	if (extents)
		*extents = 0;
	if (bytes)
		*bytes = 0;
	if (!f->has_record)
		return 0;
	err = pb_willneed(f->fd, &f->rec, pb_content_size(f), gap, limit, extents, bytes, NULL);
	if (err) {
		errno = err;
		return pb_error_errno(f->path, "posix_fadvise");
	}
	return 0;
}

/* ---- command lines ------------------------------------------------------- */

/*
 * Only the options every verb takes (pb_getopt()); stops at the first
 * non-option (CMD's options are CMD's).  Returns -1 to go on, else the
 * exit status.
 */
static int parse_flags(int argc, char **argv)
{
	int c = pb_getopt(argc, argv, "+", NULL);

	if (c != -1)
		return pb_option_exit(c);
	return -1;
}

static int prefetch_path(const char *path)
{
	uint64_t extents, bytes;
	struct pb_file f;
	int ret;

	ret = pb_open(&f, path, PB_OPEN_FOLLOW);
	if (ret)
		return ret == PB_NONE ? 0 : ret;
	if (!f.has_record) {
		if (f.damage)
			pb_note(path, "bitmap unusable (%s); nothing to prefetch", f.damage);
		else
			pb_note(path, "no bitmap; nothing to prefetch");
	} else {
		ret = pb_prefetch_file(&f, PB_WILLNEED_GAP, 0, &extents, &bytes);
		if (!ret && pb_verbose)
			printf("%s: %" PRIu64 " extents, %" PRIu64 " bytes\n", path,
			       extents, bytes);
	}
	pb_close(&f);
	return ret;
}

static int prefetch_one(const char *path, unsigned int flags, void *arg)
{
	(void)flags;
	(void)arg;
	return prefetch_path(path);
}

int pb_cmd_prefetch(int argc, char **argv)
{
	int ret = parse_flags(argc, argv);

	if (ret >= 0)
		return ret;
	pb_willneed_set_skip_cached(true);
	return pb_for_each_file(argc, argv, false, 0, prefetch_one, NULL);
}

/* ---- `run`: the objects ld.so will load ----------------------------------- */

struct strv {
	char **v;
	size_t n, cap;
};

/* Takes ownership of @s (NULL: out of memory, reported). */
static int strv_push(struct strv *sv, char *s)
{
	char **n;

	if (!s)
		return pb_error_errno(NULL, "run: malloc");
	n = pb_grow(sv->v, sv->n, &sv->cap, sizeof(*n), 8);
	if (!n) {
		free(s);
		return pb_error_errno(NULL, "run: malloc");
	}
	sv->v = n;
	sv->v[sv->n++] = s;
	return 0;
}

static void strv_free(struct strv *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	*sv = (struct strv){ 0 };
}

struct object {
	char *path;		/* as opened */
	char *origin;		/* what $ORIGIN stands for */
	char *soname;		/* DT_SONAME */
	char *interp;		/* PT_INTERP (the executable only) */
	char *rpath, *runpath;	/* DT_RPATH, DT_RUNPATH, tokens unexpanded */
	struct strv names;	/* names it was requested under */
	struct strv needed;	/* DT_NEEDED */
	bool nodeflib;		/* DF_1_NODEFLIB: no default directories */
	size_t loader;		/* the object whose DT_NEEDED brought it in */
	dev_t dev;
	ino_t ino;
};

struct loadset {
	struct object *objs;
	size_t nr, cap;
	int elf_class;		/* of the executable: every object must match */
	unsigned int machine;
	bool secure;		/* set-id executable: no LD_LIBRARY_PATH, LD_PRELOAD */
	const char *hwcaps[4];	/* glibc-hwcaps subdirectories searched, best first */
	size_t nr_hwcaps;
	bool cache_read;
	unsigned char *cache;	/* /etc/ld.so.cache, NULL if absent or unusable */
	size_t cache_size, cache_base;	/* the "glibc-ld.so.cache1.1" header's offset */
	uint64_t gap;		/* PB_WILLNEED_GAP, or pbitmapd's */
	bool exe_done;		/* the executable was read ahead already */
	bool exe_resolved;	/* its path the kernel's (pbitmapd): no realpath(), whose
				 * look-ups are not confined to local filesystems */
	uint64_t budget;	/* bytes; 0: no limit */
	uint64_t files, extents, bytes, over_budget;
};

/* What a candidate file turned out to be. */
enum { OBJ_ABSENT = -1, OBJ_MISMATCH = -2, OBJ_FAIL = -3 };

static void object_free(struct object *o)
{
	free(o->path);
	free(o->origin);
	free(o->soname);
	free(o->interp);
	free(o->rpath);
	free(o->runpath);
	strv_free(&o->names);
	strv_free(&o->needed);
}

static void loadset_free(struct loadset *ls)
{
	for (size_t i = 0; i < ls->nr; i++)
		object_free(&ls->objs[i]);
	free(ls->objs);
	free(ls->cache);
}

/* ---- dynamic string tokens ---------------------------------------------- */

/* $LIB as Debian's ld.so defines it (multiarch). */
static const char *dst_lib(const struct loadset *ls)
{
	if (ls->machine == EM_X86_64 && ls->elf_class == ELFCLASS64)
		return "lib/x86_64-linux-gnu";
	if (ls->machine == EM_386)
		return "lib/i386-linux-gnu";
	if (ls->machine == EM_AARCH64)
		return "lib/aarch64-linux-gnu";
	return ls->elf_class == ELFCLASS64 ? "lib64" : "lib";
}

static const char *dst_platform(const struct loadset *ls)
{
	const char *p = (const char *)getauxval(AT_PLATFORM);

	if (ls->machine == EM_386)
		return "i686";
	return p ? p : "";
}

/* Length of the token $NAME or ${NAME} at @s (which starts after '$'), 0 if not it. */
static size_t dst_match(const char *s, const char *name)
{
	size_t len = strlen(name);

	if (s[0] == '{')
		return !strncmp(s + 1, name, len) && s[1 + len] == '}' ? len + 2 : 0;
	if (strncmp(s, name, len))
		return 0;
	/* "$ORIGINAL" is not $ORIGIN followed by "AL" */
	return (s[len] == '_' || (s[len] >= 'A' && s[len] <= 'Z') ||
		(s[len] >= 'a' && s[len] <= 'z') || (s[len] >= '0' && s[len] <= '9')) ?
	       0 : len;
}

/* The value of the token at @s (a '$'), its length in @skip; NULL if none. */
static const char *dst_value(const struct loadset *ls, const char *s, const char *origin,
			     size_t *skip)
{
	if ((*skip = dst_match(s + 1, "ORIGIN")))
		return origin;
	if ((*skip = dst_match(s + 1, "LIB")))
		return dst_lib(ls);
	if ((*skip = dst_match(s + 1, "PLATFORM")))
		return dst_platform(ls);
	return NULL;
}

/* Expand $ORIGIN, $LIB and $PLATFORM in @s.  Returns malloc'ed, or NULL. */
static char *expand_dst(const struct loadset *ls, const char *s, const char *origin)
{
	char *out = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&out, &len);

	if (!mem)
		return NULL;
	while (*s) {
		size_t skip = 0;
		const char *val = *s == '$' ? dst_value(ls, s, origin, &skip) : NULL;

		if (val) {
			fputs(val, mem);
			s += 1 + skip;
		} else {
			fputc(*s++, mem);
		}
	}
	if (fclose(mem)) {
		free(out);
		return NULL;
	}
	return out;
}

/* ld.so: $ORIGIN of the executable is its resolved location; of a library,
 * the directory of the name it was opened under. */
static char *origin_of(const char *path, bool resolve)
{
	char buf[PATH_MAX], *copy, *dir, *res;

	if (resolve && realpath(path, buf))
		copy = strdup(buf);
	else if (path[0] != '/' && getcwd(buf, sizeof(buf)))
		copy = (asprintf(&res, "%s/%s", buf, path) < 0) ? NULL : res;
	else
		copy = strdup(path);
	if (!copy)
		return NULL;
	dir = strdup(dirname(copy));
	free(copy);
	return dir;
}

/* ---- reading an object with libelf -------------------------------------- */

/* File offset of virtual address @vaddr, from the PT_LOAD segments. */
static bool vaddr_to_offset(Elf *elf, size_t phnum, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr p;

		if (gelf_getphdr(elf, (int)i, &p) && p.p_type == PT_LOAD &&
		    vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz) {
			*off = p.p_offset + (vaddr - p.p_vaddr);
			return true;
		}
	}
	return false;
}

/* A NUL-terminated string at @off of the string table, or NULL. */
static const char *dyn_string(const Elf_Data *strtab, uint64_t off)
{
	const char *base = strtab ? strtab->d_buf : NULL;

	if (!base || off >= strtab->d_size || !memchr(base + off, 0, strtab->d_size - off))
		return NULL;
	return base + off;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The entries of PT_DYNAMIC that matter to the loader. */
struct dyn_info {
	uint64_t strtab, strsz, soname, rpath, runpath, flags_1;
	bool has_strtab, has_soname, has_rpath, has_runpath;
	size_t nr_needed;
	uint64_t *needed;	/* string offsets */
};

static int scan_dynamic(Elf_Data *d, size_t count, struct dyn_info *di)
{
	GElf_Dyn dyn;

	di->needed = calloc(count ? count : 1, sizeof(*di->needed));
	if (!di->needed)
		return PB_FAIL;
	for (size_t i = 0; i < count && gelf_getdyn(d, (int)i, &dyn); i++) {
		uint64_t v = dyn.d_un.d_val;

		switch (dyn.d_tag) {
		case DT_NULL:
			return 0;
		case DT_NEEDED:
			di->needed[di->nr_needed++] = v;
			break;
		case DT_STRTAB:
			di->strtab = v;
			di->has_strtab = true;
			break;
		case DT_STRSZ:
			di->strsz = v;
			break;
		case DT_SONAME:
			di->soname = v;
			di->has_soname = true;
			break;
		case DT_RPATH:
			di->rpath = v;
			di->has_rpath = true;
			break;
		case DT_RUNPATH:
			di->runpath = v;
			di->has_runpath = true;
			break;
		case DT_FLAGS_1:
			di->flags_1 = v;
			break;
		}
	}
	return 0;
}

/* Copy what the loader uses out of the dynamic section into @o. */
static int keep_dynamic(struct object *o, const struct dyn_info *di, const Elf_Data *strtab)
{
	const char *s;

	for (size_t i = 0; i < di->nr_needed; i++)
		if ((s = dyn_string(strtab, di->needed[i])) && strv_push(&o->needed, strdup(s)))
			return PB_FAIL;
	o->soname = di->has_soname ? dup_or_null(dyn_string(strtab, di->soname)) : NULL;
	o->rpath = di->has_rpath ? dup_or_null(dyn_string(strtab, di->rpath)) : NULL;
	o->runpath = di->has_runpath ? dup_or_null(dyn_string(strtab, di->runpath)) : NULL;
	o->nodeflib = di->flags_1 & DF_1_NODEFLIB;
	return 0;
}

static int read_dynamic(Elf *elf, size_t phnum, const GElf_Phdr *dynp, struct object *o)
{
	struct dyn_info di = { 0 };
	Elf_Data *d, *strtab = NULL;
	uint64_t stroff;
	size_t entsize = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
	int ret;

	d = elf_getdata_rawchunk(elf, (int64_t)dynp->p_offset, dynp->p_filesz, ELF_T_DYN);
	if (!d || !entsize)
		return pb_error(o->path, "unreadable dynamic section: %s", elf_errmsg(-1));
	ret = scan_dynamic(d, d->d_size / entsize, &di);
	if (ret)
		return pb_error_errno(o->path, "malloc");
	if (di.has_strtab && vaddr_to_offset(elf, phnum, di.strtab, &stroff))
		strtab = elf_getdata_rawchunk(elf, (int64_t)stroff, di.strsz, ELF_T_BYTE);
	if (!strtab && (di.nr_needed || di.has_soname || di.has_rpath || di.has_runpath))
		ret = pb_error(o->path, "unreadable dynamic string table");
	else
		ret = keep_dynamic(o, &di, strtab);
	free(di.needed);
	return ret;
}

static int read_interp(Elf *elf, const GElf_Phdr *p, struct object *o)
{
	Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)p->p_offset, p->p_filesz, ELF_T_BYTE);

	if (!d || !d->d_size || !memchr(d->d_buf, 0, d->d_size))
		return pb_error(o->path, "unreadable PT_INTERP");
	o->interp = strdup(d->d_buf);
	return o->interp ? 0 : pb_error_errno(o->path, "malloc");
}

/* PT_INTERP (executable only) and PT_DYNAMIC. */
static int read_segments(Elf *elf, struct object *o, bool exe)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum))
		return pb_error(o->path, "unreadable program headers: %s", elf_errmsg(-1));
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr p;

		if (!gelf_getphdr(elf, (int)i, &p))
			return pb_error(o->path, "unreadable program header: %s", elf_errmsg(-1));
		if (p.p_type == PT_INTERP && exe && read_interp(elf, &p, o))
			return PB_FAIL;
		if (p.p_type == PT_DYNAMIC && read_dynamic(elf, phnum, &p, o))
			return PB_FAIL;
	}
	return 0;
}

/* ---- the load set -------------------------------------------------------- */

static void prefetch_object(struct loadset *ls, const char *path, unsigned int flags)
{
	uint64_t extents, bytes;
	struct pb_file f;

	if (ls->budget && ls->bytes >= ls->budget) {
		ls->over_budget++;
		return;
	}
	if (pb_open(&f, path, PB_OPEN_FOLLOW | PB_OPEN_PROBE | flags))
		return;
	if (f.has_record && !pb_prefetch_file(&f, ls->gap, ls->budget ? ls->budget - ls->bytes : 0,
					      &extents, &bytes)) {
		ls->files++;
		ls->extents += extents;
		ls->bytes += bytes;
		if (pb_verbose)
			pb_note(path, "%" PRIu64 " extents, %" PRIu64 " bytes", extents, bytes);
	} else if (!f.has_record && pb_verbose) {
		pb_note(path, "no bitmap");
	}
	pb_close(&f);
}

static ssize_t find_loaded(const struct loadset *ls, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < ls->nr; i++)
		if (ls->objs[i].dev == dev && ls->objs[i].ino == ino)
			return (ssize_t)i;
	return -1;
}

static struct object *new_object(struct loadset *ls)
{
	struct object *n = pb_grow(ls->objs, ls->nr, &ls->cap, sizeof(*n), 16);

	if (!n)
		return NULL;
	ls->objs = n;
	ls->objs[ls->nr] = (struct object){ 0 };
	return &ls->objs[ls->nr];
}

/*
 * glibc (2.33 on) looks in DIR/glibc-hwcaps/SUBDIR/ before DIR itself, for
 * every directory it searches, SUBDIR running over the ISA levels the CPU
 * supports, best first (`ld.so --help` lists them).  The x86-64 levels are
 * the ones known here.  The legacy hwcaps subdirectories (tls/, x86_64/,
 * haswell/), which glibc 2.37 dropped and Debian 12 does not use, are not
 * searched.
 */
static void find_hwcaps(struct loadset *ls)
{
	ls->nr_hwcaps = 0;
#if defined(__x86_64__)
	if (ls->machine != EM_X86_64 || ls->elf_class != ELFCLASS64)
		return;
	__builtin_cpu_init();
	if (__builtin_cpu_supports("x86-64-v4"))
		ls->hwcaps[ls->nr_hwcaps++] = "x86-64-v4";
	if (__builtin_cpu_supports("x86-64-v3"))
		ls->hwcaps[ls->nr_hwcaps++] = "x86-64-v3";
	if (__builtin_cpu_supports("x86-64-v2"))
		ls->hwcaps[ls->nr_hwcaps++] = "x86-64-v2";
#endif
}

/* Is @elf something the executable can load?  Sets the class for the executable. */
static int check_compatible(struct loadset *ls, Elf *elf, bool exe)
{
	GElf_Ehdr eh;
	int cls = gelf_getclass(elf);

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return OBJ_MISMATCH;
	if (exe) {
		ls->elf_class = cls;
		ls->machine = eh.e_machine;
		find_hwcaps(ls);
		return 0;
	}
	return (cls == ls->elf_class && eh.e_machine == ls->machine) ? 0 : OBJ_MISMATCH;
}

/* Record the object now open as @fd/@elf; prefetch it, then read its headers. */
static ssize_t add_object(struct loadset *ls, const char *path, int fd, Elf *elf,
			  size_t loader, const char *name)
{
	struct object *o;
	struct stat st;
	ssize_t idx;

	if (fstat(fd, &st)) {
		pb_error_errno(path, "fstat");
		return OBJ_FAIL;
	}
	idx = find_loaded(ls, st.st_dev, st.st_ino);
	if (idx >= 0) {
		/* the same file under another name (e.g. /lib -> usr/lib) */
		if (name && strv_push(&ls->objs[idx].names, strdup(name)))
			return OBJ_FAIL;
		return idx;
	}
	o = new_object(ls);
	if (!o) {
		pb_error_errno(path, "malloc");
		return OBJ_FAIL;
	}
	idx = (ssize_t)ls->nr++;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->loader = loader;
	o->path = strdup(path);
	o->origin = origin_of(path, idx == 0 && !ls->exe_resolved);
	if (!o->path || !o->origin || (name && strv_push(&o->names, strdup(name)))) {
		pb_error_errno(path, "malloc");
		return OBJ_FAIL;
	}
	if (idx || !ls->exe_done)
		prefetch_object(ls, path, PB_OPEN_ELF_ONLY);
	if (read_segments(elf, &ls->objs[idx], idx == 0))
		return OBJ_FAIL;
	return idx;
}

/*
 * Open @path as an object of the load set.  Returns its index (new or
 * already there), OBJ_ABSENT (try the next directory), OBJ_MISMATCH
 * (wrong class or machine: ld.so skips it too) or OBJ_FAIL.
 */
static ssize_t load_object(struct loadset *ls, const char *path, size_t loader,
			   const char *name)
{
	bool exe = ls->nr == 0;
	struct stat st;
	ssize_t ret;
	Elf *elf;
	int fd;

	/* O_NONBLOCK and S_ISREG: a name that leads to a FIFO must not hang us */
	fd = pb_path_open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
		errno = EINVAL;
	}
	if (fd < 0) {
		if (!exe)
			return OBJ_ABSENT;	/* whatever the reason, ld.so tries the next one */
		pb_error_errno(path, "cannot open");
		return OBJ_FAIL;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	ret = elf ? check_compatible(ls, elf, exe) : OBJ_MISMATCH;
	if (!ret) {
		ret = add_object(ls, path, fd, elf, loader, name);
	} else if (exe) {
		if (pb_verbose)
			pb_note(path, "not an ELF file; only the command itself is prefetched");
		prefetch_object(ls, path, 0);
		ret = OBJ_FAIL;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* ---- search path --------------------------------------------------------- */

static const char *const default_dirs_x86_64[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
	"/lib", "/usr/lib", NULL,
};
static const char *const default_dirs_i386[] = {
	"/lib/i386-linux-gnu", "/usr/lib/i386-linux-gnu", "/lib32", "/usr/lib32",
	"/lib", "/usr/lib", NULL,
};
static const char *const default_dirs_64[] = { "/lib64", "/usr/lib64", "/lib", "/usr/lib", NULL };
static const char *const default_dirs_32[] = { "/lib32", "/usr/lib32", "/lib", "/usr/lib", NULL };

static const char *const *default_dirs(const struct loadset *ls)
{
	if (ls->machine == EM_X86_64 && ls->elf_class == ELFCLASS64)
		return default_dirs_x86_64;
	if (ls->machine == EM_386)
		return default_dirs_i386;
	return ls->elf_class == ELFCLASS64 ? default_dirs_64 : default_dirs_32;
}

/* Try DIR/SUB/NAME (SUB empty or ending in '/'); see load_object() for the result. */
static ssize_t try_path(struct loadset *ls, const char *dir, const char *sub, const char *name,
			size_t loader)
{
	char *path;
	ssize_t ret;

	if (asprintf(&path, "%s/%s%s", *dir ? dir : ".", sub, name) < 0) {
		pb_error_errno(name, "malloc");
		return OBJ_FAIL;
	}
	ret = load_object(ls, path, loader, name);
	free(path);
	return ret;
}

/* Try DIR's glibc-hwcaps subdirectories, best first, then DIR itself. */
static ssize_t try_dir(struct loadset *ls, const char *dir, const char *name, size_t loader)
{
	ssize_t ret = OBJ_ABSENT;

	for (size_t i = 0; i < ls->nr_hwcaps && ret < 0 && ret != OBJ_FAIL; i++) {
		char sub[64];

		snprintf(sub, sizeof(sub), "glibc-hwcaps/%s/", ls->hwcaps[i]);
		ret = try_path(ls, dir, sub, name, loader);
	}
	if (ret < 0 && ret != OBJ_FAIL)
		ret = try_path(ls, dir, "", name, loader);
	return ret;
}

/* Try each directory of a colon-separated list, $ORIGIN being @origin. */
static ssize_t try_list(struct loadset *ls, const char *list, const char *seps,
			const char *origin, const char *name, size_t loader)
{
	char *copy = strdup(list), *rest = copy, *dir;
	ssize_t ret = OBJ_ABSENT;

	if (!copy) {
		pb_error_errno(name, "malloc");
		return OBJ_FAIL;
	}
	while (ret < 0 && ret != OBJ_FAIL && (dir = strsep(&rest, seps))) {
		char *exp = expand_dst(ls, dir, origin);

		if (!exp) {
			pb_error_errno(name, "malloc");
			ret = OBJ_FAIL;
			break;
		}
		ret = try_dir(ls, exp, name, loader);
		free(exp);
	}
	free(copy);
	return ret;
}

static ssize_t try_dirs(struct loadset *ls, const char *const *dirs, const char *name,
			size_t loader)
{
	ssize_t ret = OBJ_ABSENT;

	for (size_t i = 0; dirs[i] && ret < 0 && ret != OBJ_FAIL; i++)
		ret = try_dir(ls, dirs[i], name, loader);
	return ret;
}

/* ---- /etc/ld.so.cache ------------------------------------------------------ */

/*
 * ld.so does not read /etc/ld.so.conf: it looks a name up in the cache
 * ldconfig built from it (sysdeps/generic/dl-cache.h in glibc), then goes on
 * to the default directories.  So does this.  The format: an optional old
 * "ld.so-1.7.0" part, then the header below, its entries sorted by name and
 * the strings, offsets counting from the header; an entry whose hwcap field
 * is CACHE_HWCAP_EXTENSION plus an index names a glibc-hwcaps subdirectory
 * through the extension section of tag CACHE_EXT_GLIBC_HWCAPS.
 */
#define CACHE_MAGIC_OLD		"ld.so-1.7.0"
#define CACHE_MAGIC_NEW		"glibc-ld.so.cache1.1"
#define CACHE_EXT_MAGIC		0xeaa42174u
#define CACHE_EXT_GLIBC_HWCAPS	1
#define CACHE_HWCAP_EXTENSION	(1ull << 62)
#define CACHE_FLAG_TYPE_MASK	0x00ff
#define CACHE_FLAG_ELF_LIBC6	0x0003
#define CACHE_FLAG_ARCH_MASK	0xff00
#define CACHE_FLAG_X8664_LIB64	0x0300
#define CACHE_FLAG_AARCH64_LIB64 0x0a00

struct cache_header {
	char magic[20];
	uint32_t nlibs, len_strings;
	uint8_t flags, pad[3];
	uint32_t extension_offset, unused[3];
};

struct cache_entry {
	int32_t flags;
	uint32_t key, value, osversion;
	uint64_t hwcap;
};

struct cache_ext_section {
	uint32_t tag, flags, offset, size;
};

static void cache_load(struct loadset *ls)
{
	struct stat st;
	size_t base = 0;
	ssize_t n;
	int fd;

	ls->cache_read = true;
	fd = pb_path_open("/etc/ld.so.cache", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(struct cache_header) ||
	    st.st_size > (64 << 20) || !(ls->cache = malloc((size_t)st.st_size))) {
		close(fd);
		return;
	}
	n = pread(fd, ls->cache, (size_t)st.st_size, 0);
	close(fd);
	ls->cache_size = n > 0 ? (size_t)n : 0;
	if (ls->cache_size >= 16 && !memcmp(ls->cache, CACHE_MAGIC_OLD, sizeof(CACHE_MAGIC_OLD) - 1)) {
		uint32_t nold;

		memcpy(&nold, ls->cache + 12, sizeof(nold));
		base = 16 + (size_t)nold * 12;	/* old entries: flags, key, value */
	}
	if (base > ls->cache_size || ls->cache_size - base < sizeof(struct cache_header) ||
	    memcmp(ls->cache + base, CACHE_MAGIC_NEW, sizeof(CACHE_MAGIC_NEW) - 1)) {
		free(ls->cache);	/* not a format ld.so would use either */
		ls->cache = NULL;
		return;
	}
	ls->cache_base = base;
}

/* The NUL-terminated string at @off from the header, or NULL. */
static const char *cache_string(const struct loadset *ls, uint64_t off)
{
	uint64_t at = ls->cache_base + off;

	if (at >= ls->cache_size || !memchr(ls->cache + at, 0, ls->cache_size - at))
		return NULL;
	return (const char *)ls->cache + at;
}

/* The glibc-hwcaps subdirectory of extension index @idx, or NULL. */
static const char *cache_hwcaps_name(const struct loadset *ls, const struct cache_header *h,
				     uint32_t idx)
{
	uint64_t at = ls->cache_base + h->extension_offset;
	uint32_t magic, count, off;

	if (!h->extension_offset || at + 8 > ls->cache_size)
		return NULL;
	memcpy(&magic, ls->cache + at, 4);
	memcpy(&count, ls->cache + at + 4, 4);
	if (magic != CACHE_EXT_MAGIC)
		return NULL;
	for (uint32_t i = 0; i < count; i++) {
		struct cache_ext_section sec;
		uint64_t s = at + 8 + (uint64_t)i * sizeof(sec);

		if (s + sizeof(sec) > ls->cache_size)
			return NULL;
		memcpy(&sec, ls->cache + s, sizeof(sec));
		if (sec.tag != CACHE_EXT_GLIBC_HWCAPS || (uint64_t)idx * 4 + 4 > sec.size ||
		    ls->cache_base + (uint64_t)sec.offset + sec.size > ls->cache_size)
			continue;
		memcpy(&off, ls->cache + ls->cache_base + sec.offset + (uint64_t)idx * 4, 4);
		return cache_string(ls, off);
	}
	return NULL;
}

/* The cache's flags for objects of the executable's kind; -1: any. */
static int cache_arch(const struct loadset *ls)
{
	if (ls->machine == EM_X86_64 && ls->elf_class == ELFCLASS64)
		return CACHE_FLAG_X8664_LIB64;
	if (ls->machine == EM_386)
		return 0;
	if (ls->machine == EM_AARCH64)
		return CACHE_FLAG_AARCH64_LIB64;
	return -1;
}

/* Rank of an entry as ld.so ranks them: 0 unusable, higher is better. */
static size_t cache_rank(const struct loadset *ls, const struct cache_header *h,
			 const struct cache_entry *e)
{
	const char *sub;

	if ((e->flags & CACHE_FLAG_TYPE_MASK) != CACHE_FLAG_ELF_LIBC6 ||
	    (cache_arch(ls) >= 0 && (e->flags & CACHE_FLAG_ARCH_MASK) != cache_arch(ls)))
		return 0;
	if (!e->hwcap)
		return 1;	/* the directory itself */
	if ((e->hwcap >> 32) != (CACHE_HWCAP_EXTENSION >> 32))
		return 0;	/* a legacy hwcaps subdirectory: not searched (see find_hwcaps) */
	sub = cache_hwcaps_name(ls, h, (uint32_t)e->hwcap);
	for (size_t i = 0; sub && i < ls->nr_hwcaps; i++)
		if (!strcmp(sub, ls->hwcaps[i]))
			return 1 + ls->nr_hwcaps - i;
	return 0;	/* a level this CPU lacks */
}

/* The path the cache gives for @name, or NULL. */
static const char *cache_lookup(struct loadset *ls, const char *name)
{
	const struct cache_header *h;
	const char *best = NULL;
	size_t best_rank = 0;

	if (!ls->cache_read)
		cache_load(ls);
	if (!ls->cache)
		return NULL;
	h = (const struct cache_header *)(ls->cache + ls->cache_base);
	for (uint64_t i = 0; i < h->nlibs; i++) {
		uint64_t at = ls->cache_base + sizeof(*h) + i * sizeof(struct cache_entry);
		struct cache_entry e;
		const char *key, *value;
		size_t rank;

		if (at + sizeof(e) > ls->cache_size)
			break;
		memcpy(&e, ls->cache + at, sizeof(e));
		key = cache_string(ls, e.key);
		if (!key || strcmp(key, name))
			continue;
		value = cache_string(ls, e.value);
		rank = value ? cache_rank(ls, h, &e) : 0;
		if (rank > best_rank) {
			best = value;
			best_rank = rank;
		}
	}
	return best;
}

/* Is @path in one of the default directories (for DF_1_NODEFLIB)? */
static bool in_default_dir(const struct loadset *ls, const char *path)
{
	const char *slash = strrchr(path, '/');

	for (const char *const *d = default_dirs(ls); slash && *d; d++)
		if (strlen(*d) == (size_t)(slash - path) && !strncmp(path, *d, (size_t)(slash - path)))
			return true;
	return false;
}

/* ---- resolving DT_NEEDED ----------------------------------------------------- */

static bool known_name(const struct loadset *ls, const char *name)
{
	for (size_t i = 0; i < ls->nr; i++) {
		const struct object *o = &ls->objs[i];

		if (o->soname && !strcmp(o->soname, name))
			return true;
		for (size_t j = 0; j < o->names.n; j++)
			if (!strcmp(o->names.v[j], name))
				return true;
	}
	return false;
}

/* DT_RPATH of the loader, its loader and so on up to the executable,
 * skipping objects that have DT_RUNPATH (ld.so ignores their DT_RPATH). */
static ssize_t search_rpaths(struct loadset *ls, const char *name, size_t loader)
{
	ssize_t ret = OBJ_ABSENT;
	size_t l = loader;

	for (;;) {
		const struct object *o = &ls->objs[l];

		if (o->rpath && !o->runpath) {
			char *list = strdup(o->rpath), *origin = strdup(o->origin);

			if (list && origin)
				ret = try_list(ls, list, ":", origin, name, loader);
			free(list);
			free(origin);
			if (ret >= 0 || ret == OBJ_FAIL)
				return ret;
		}
		if (l == 0)
			return ret;
		l = ls->objs[l].loader;
	}
}

/* ld.so's order: RPATH (if no RUNPATH), LD_LIBRARY_PATH, RUNPATH, cache, defaults. */
static ssize_t search(struct loadset *ls, const char *name, size_t loader)
{
	const char *llp = ls->secure ? NULL : getenv("LD_LIBRARY_PATH");
	const char *cached;
	char *runpath = NULL, *origin = NULL;
	bool nodeflib = ls->objs[loader].nodeflib;
	ssize_t ret = OBJ_ABSENT;

	if (!ls->objs[loader].runpath)
		ret = search_rpaths(ls, name, loader);
	if (ret < 0 && ret != OBJ_FAIL && llp && *llp)
		ret = try_list(ls, llp, ":;", ls->objs[0].origin, name, loader);
	if (ret < 0 && ret != OBJ_FAIL && ls->objs[loader].runpath) {
		/* copies: loading may move ls->objs */
		runpath = strdup(ls->objs[loader].runpath);
		origin = strdup(ls->objs[loader].origin);
		if (runpath && origin)
			ret = try_list(ls, runpath, ":", origin, name, loader);
		free(runpath);
		free(origin);
	}
	if (ret < 0 && ret != OBJ_FAIL) {
		/* ld.so skips a cached object in a default directory under nodeflib */
		cached = cache_lookup(ls, name);
		if (cached && !(nodeflib && in_default_dir(ls, cached)))
			ret = load_object(ls, cached, loader, name);
	}
	if (ret < 0 && ret != OBJ_FAIL && !nodeflib)
		ret = try_dirs(ls, default_dirs(ls), name, loader);
	return ret;
}

static void resolve_needed(struct loadset *ls, const char *name, size_t loader)
{
	ssize_t ret;

	if (known_name(ls, name))
		return;
	if (strchr(name, '/')) {
		char *origin = strdup(ls->objs[loader].origin);
		char *path = origin ? expand_dst(ls, name, origin) : NULL;

		ret = path ? load_object(ls, path, loader, name) : OBJ_FAIL;
		free(path);
		free(origin);
	} else {
		ret = search(ls, name, loader);
	}
	if (ret < 0 && ret != OBJ_FAIL && pb_verbose)
		pb_note(name, "not found (needed by %s)", ls->objs[loader].path);
}

/* LD_PRELOAD and /etc/ld.so.preload come first, as if the executable needed them. */
static void add_preloads(struct loadset *ls)
{
	const char *env = ls->secure ? NULL : getenv("LD_PRELOAD");
	char *buf = NULL, *rest, *name;
	size_t cap = 0;
	FILE *fp;

	if (env && (buf = strdup(env)))
		for (rest = buf; (name = strsep(&rest, " :")) != NULL;)
			if (*name)
				resolve_needed(ls, name, 0);
	free(buf);
	buf = NULL;
	fp = pb_path_fopen_read("/etc/ld.so.preload");
	if (!fp)
		return;
	while (getline(&buf, &cap, fp) > 0)
		for (rest = buf; (name = strsep(&rest, " :\t\n")) != NULL;)
			if (*name && *name != '#')
				resolve_needed(ls, name, 0);
	free(buf);
	fclose(fp);
}

/* ld.so ignores the environment for set-id programs (AT_SECURE). */
static bool is_secure(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 &&
	       (((st.st_mode & S_ISUID) && st.st_uid != getuid()) ||
		((st.st_mode & S_ISGID) && st.st_gid != getgid()));
}

/* The executable, its interpreter, then the DT_NEEDED closure breadth-first. */
/* What ld.so loads for the executable, ls->objs[0]. */
static void prefetch_needed(struct loadset *ls, const char *exe)
{
	if (ls->objs[0].interp) {
		char *interp = strdup(ls->objs[0].interp);

		if (interp && load_object(ls, interp, 0, NULL) == OBJ_ABSENT && pb_verbose)
			pb_note(interp, "not found (interpreter of %s)", exe);
		free(interp);
	}
	if (!ls->objs[0].interp)	/* static: nothing else is loaded */
		return;
	add_preloads(ls);
	for (size_t i = 0; i < ls->nr; i++)
		for (size_t j = 0; j < ls->objs[i].needed.n; j++) {
			/* copy: loading may move ls->objs and the strings with it */
			char *name = strdup(ls->objs[i].needed.v[j]);

			if (name)
				resolve_needed(ls, name, i);
			free(name);
		}
}

static void prefetch_closure(struct loadset *ls, const char *exe)
{
	ls->secure = is_secure(exe);
	if (load_object(ls, exe, 0, NULL) == 0)
		prefetch_needed(ls, exe);
}

/* ---- pbitmapd: an exec's prefetch ---------------------------------------- */

/* A file's identity as a plan's entry gives it (docs/FORMAT.md, "Identity"). */
struct plan_identity {
	uint64_t ino, size;
	uint32_t dev, generation;
};

/* The identity of the regular file open as @fd: 0, or -1 when it is none. */
static int plan_identity(int fd, struct plan_identity *id)
{
	struct stat st;
	int gen;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -1;
	if (ioctl(fd, FS_IOC_GETVERSION, &gen))
		gen = 0;	/* no generations here: the kernel sees 0 too */
	*id = (struct plan_identity){ .ino = (uint64_t)st.st_ino, .size = (uint64_t)st.st_size,
				      .dev = (uint32_t)st.st_dev, .generation = (uint32_t)gen };
	return 0;
}

/* Whether entry @pf names the file of identity @id: the kernel's rule. */
static bool plan_names(const struct pbitmap_plan_file *pf, const struct plan_identity *id)
{
	return id->dev == le32toh(pf->dev) && id->ino == le64toh(pf->ino) &&
	       id->size == le64toh(pf->size) && id->generation == le32toh(pf->generation);
}

/*
 * Open the plan's file @i if its path leads, as the exec'ing task looks it
 * up (the caller is in its root, with its credentials), to the very file
 * the plan names: the kernel's identity rule (docs/FORMAT.md, "Identity").
 * A descriptor, or -1 with the reason counted.
 */
static int plan_open(const struct pb_plan_view *v, uint32_t i, struct pb_exec_prefetch *p)
{
	struct plan_identity id;
	int fd;

	fd = pb_path_open_plan(v->names + le32toh(v->files[i].name));
	if (fd < 0) {
		if (errno == EXDEV)
			p->skip_fs++;
		else if (errno == EACCES || errno == EPERM)	/* modes, ACLs, LSMs */
			p->skip_denied++;
		else
			p->skip_mismatch++;
		return -1;
	}
	if (plan_identity(fd, &id) || !plan_names(&v->files[i], &id)) {
		close(fd);
		p->skip_mismatch++;
		return -1;
	}
	return fd;
}

/*
 * Whether to leave the plan's file @i, open as @fd, to the kernel: a
 * stamped data file (its record in user.pbitmap), as @p->data_to_kernel
 * says for its device.  Its open is heard of too, and it is read there or
 * not by the same rule (pbitmapd's PBITMAP_DAEMON_READ_DATA).  A value
 * longer than the buffer is not a marker (32 bytes): a record.
 */
static bool plan_leaves(const struct pb_plan_view *v, uint32_t i, int fd,
			const struct pb_exec_prefetch *p)
{
	unsigned char value[64];
	ssize_t n;

	if ((int64_t)i == p->exe_entry || !pb_leaves(p->data_to_kernel, le32toh(v->files[i].dev)))
		return false;
	n = fgetxattr(fd, PBITMAP_XATTR_NAME, value, sizeof(value));
	return n < 0 ? errno == ERANGE : pb_attr_is_record(value, (size_t)n);
}

/*
 * Submit @range of the file open as @fd within the budget: true if it
 * was.  A range that does not fit, or that the kernel refuses, ends the
 * file's reads (*@left, its runs still to come, 0).
 */
static bool plan_read_range(int fd, struct pb_extent range, uint64_t chunk, uint32_t *left,
			    struct pb_exec_prefetch *p)
{
	uint64_t len = range.end - range.off;

	if (p->budget && p->bytes + len > p->budget) {
		p->skip_budget++;	/* the rest of this file */
		*left = 0;
		return false;
	}
	if (pb_willneed_range(fd, range.off, len, chunk)) {
		*left = 0;
		return false;
	}
	p->extents++;
	p->bytes += len;
	return true;
}

/*
 * Submit run @r of the file open as @fd, on device @dev (the plan's entry
 * names it, and plan_open() checked that), @cached what the page cache
 * holds of it: its steps wholly cached left out (pb_cached_whole(), so
 * that no gap is read around cached pages alone) and the others joined
 * again across @p->gap, as pb_plan_runs() joined them.  True if every
 * range left was submitted (none left, every page cached, counts as
 * submitted).
 */
static bool plan_read_run(const struct pb_plan_view *v, const struct pb_plan_run *r, int fd,
			  struct pb_cached *cached, dev_t dev, uint32_t *left,
			  struct pb_exec_prefetch *p)
{
	uint64_t chunk = pb_willneed_chunk(dev);
	struct pb_join join = { .gap = p->gap };
	struct pb_extent ready;

	for (uint32_t s = r->first; s <= r->last; s++) {
		uint64_t off = (uint64_t)le32toh(v->steps[s].start) << PBITMAP_PLAN_UNIT_SHIFT;
		uint64_t end = off + ((uint64_t)le32toh(v->steps[s].nr) << PBITMAP_PLAN_UNIT_SHIFT);

		if (!pb_cached_whole(cached, off, end) && pb_join_add(&join, off, end, &ready) &&
		    !plan_read_range(fd, ready, chunk, left, p))
			return false;
	}
	return !pb_join_end(&join, &ready) || plan_read_range(fd, ready, chunk, left, p);
}

/*
 * Read the ranges of a plan as the kernel submits them (pb_plan_runs()):
 * each file's steps joined across @p->gap, the joined runs in the order
 * the start-up first needed them (the order table's; without one, the
 * steps' own).  Runs of different files may alternate, so a file is
 * opened at its first run and kept open until its last.  A file whose
 * run does not fit in what is left of the budget is left out from there.
 * The executable's entry (@p->exe_entry) is left out when its pages are
 * left to the kernel (@p->exe_to_kernel); else @p->exe_planned says
 * whether each of its runs was submitted: if not, its caller reads its
 * pages.  Stamped data files are left out as @p->data_to_kernel says
 * (plan_leaves()), counted in @p->data_left.
 */
static void prefetch_plan(const struct pb_plan_view *v, struct pb_exec_prefetch *p)
{
	enum { UNOPENED = -2, LEFT_OUT = -1 };
	struct pb_cached *cached;
	struct pb_plan_run *runs;
	uint32_t nr_runs, *left;
	struct rlimit nofile;
	bool exe_whole = true;
	int *fds;

	if (pb_plan_runs(v, p->gap, &runs, &nr_runs))
		return;
	fds = malloc(v->nr_files * (sizeof(*fds) + sizeof(*left)));
	cached = calloc(v->nr_files, sizeof(*cached));
	if (!fds || !cached) {
		free(fds);
		free(cached);
		free(runs);
		return;
	}
	left = (uint32_t *)(fds + v->nr_files);
	for (uint32_t f = 0; f < v->nr_files; f++) {
		fds[f] = UNOPENED;
		left[f] = 0;
	}
	for (uint32_t i = 0; i < nr_runs; i++)
		left[runs[i].file]++;
	/* up to nr_files descriptors at once (1024 at most): room for them */
	if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < v->nr_files + 64U) {
		nofile.rlim_cur = nofile.rlim_max < v->nr_files + 64U ?
				  nofile.rlim_max : v->nr_files + 64U;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	for (uint32_t i = 0; i < nr_runs; i++) {
		const struct pb_plan_run *r = &runs[i];
		int *fd = &fds[r->file];
		bool sent = false;

		left[r->file]--;
		if (p->exe_to_kernel && (int64_t)r->file == p->exe_entry)
			continue;	/* never opened: no descriptor to close */
		if (*fd == UNOPENED) {
			if (p->budget && p->bytes >= p->budget) {
				p->skip_budget++;
				*fd = LEFT_OUT;
			} else if ((*fd = plan_open(v, r->file, p)) < 0) {
				*fd = LEFT_OUT;
			} else if (plan_leaves(v, r->file, *fd, p)) {
				close(*fd);
				p->data_left++;
				*fd = LEFT_OUT;
			} else {
				p->files++;
				pb_cached_probe(*fd, 0, le64toh(v->files[r->file].size),
						&cached[r->file]);
			}
		}
		if (*fd >= 0)
			sent = plan_read_run(v, r, *fd, &cached[r->file],
					     le32toh(v->files[r->file].dev), &left[r->file], p);
		if (!sent && (int64_t)r->file == p->exe_entry)
			exe_whole = false;
		if (*fd >= 0 && !left[r->file]) {
			close(*fd);
			*fd = LEFT_OUT;
		}
	}
	p->exe_planned = exe_whole;
	for (uint32_t i = 0; i < v->nr_files; i++)
		p->cached_bytes += cached[i].left;
	free(cached);
	free(fds);	/* each file's descriptor was closed at its last run */
	free(runs);
}

/* Whether an exec follows @r's plan: a valid one, not empty; read into @v. */
static bool exec_plan(const struct pb_record *r, struct pb_plan_view *v)
{
	size_t size = 0;
	/* no record (a refused one): no plan */
	unsigned char *area = r->buf ? pb_plan_area(r, &size) : NULL;

	return area && !pb_plan_check(area, size) && pb_plan_read(area, size, v);
}

int pb_exec_plan_entry(const struct pb_record *r, int fd)
{
	struct plan_identity id;
	struct pb_plan_view v;

	if (!exec_plan(r, &v) || plan_identity(fd, &id))
		return -1;
	for (uint32_t i = 0; i < v.nr_files; i++)
		if (plan_names(&v.files[i], &id))
			return (int)i;	/* canonical: no other entry names it */
	return -1;
}

int pb_exec_rest(const struct pb_record *r, const struct stat *st, const char *exe,
		 struct pb_exec_prefetch *p)
{
	struct loadset ls = { .gap = p->gap, .budget = p->budget, .secure = true,
			      .exe_done = true, .exe_resolved = true, .bytes = p->bytes };
	struct pb_plan_view v;
	int ret = 0;

	elf_version(EV_CURRENT);
	if (exec_plan(r, &v)) {
		/* left: nothing opened, so no look-up of its own either */
		p->plan_left = p->plan_to_kernel;
		p->plan = !p->plan_left;
		if (p->plan)
			prefetch_plan(&v, p);
		return 0;
	}
	if (p->libs_to_kernel) {	/* nothing to read, so no name looked up */
		p->libs_left = true;
		return 0;
	}
	/* secure: the environment here is the daemon's, not the program's */
	if (load_object(&ls, exe, 0, NULL) != 0 || ls.objs[0].dev != st->st_dev ||
	    ls.objs[0].ino != st->st_ino)
		ret = PB_NONE;	/* replaced since the exec, or another root */
	else
		prefetch_needed(&ls, exe);
	p->files += ls.files;
	p->extents += ls.extents;
	p->bytes = ls.bytes;
	p->skip_budget += ls.over_budget;
	loadset_free(&ls);
	return ret;
}

/* ---- `run` --------------------------------------------------------------- */

/* CMD as execvp() would find it: malloc'ed path, or NULL. */
static char *find_command(const char *cmd)
{
	const char *path = getenv("PATH");
	char *copy, *rest, *dir, *full = NULL;

	if (strchr(cmd, '/'))
		return access(cmd, F_OK) == 0 ? strdup(cmd) : NULL;
	if (!path)
		path = "/bin:/usr/bin";	/* glibc's execvp() default */
	copy = strdup(path);
	for (rest = copy; copy && (dir = strsep(&rest, ":")) != NULL;) {
		struct stat st;

		if (asprintf(&full, "%s/%s", *dir ? dir : ".", cmd) < 0) {
			full = NULL;
			break;
		}
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
			break;
		free(full);
		full = NULL;
	}
	free(copy);
	return full;
}

/*
 * The interpreter of a "#!" script, which is what actually gets loaded
 * (malloc'ed), or NULL.  "#!/usr/bin/env NAME" means NAME from $PATH.
 */
static char *script_interpreter(const char *path)
{
	char line[PATH_MAX + 3], *interp, *arg;
	size_t n;
	FILE *fp = fopen(path, "re");

	if (!fp)
		return NULL;
	n = fread(line, 1, sizeof(line) - 1, fp);
	fclose(fp);
	line[n] = '\0';
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return NULL;
	line[strcspn(line, "\n")] = '\0';
	interp = line + 2 + strspn(line + 2, " \t");
	arg = interp + strcspn(interp, " \t");
	if (*arg)
		*arg++ = '\0';
	arg += strspn(arg, " \t");
	arg[strcspn(arg, " \t")] = '\0';
	if (!*interp)
		return NULL;
	n = strlen(interp);
	if (n >= 4 && !strcmp(interp + n - 4, "/env") && *arg && *arg != '-')
		return find_command(arg);
	return strdup(interp);
}

/*
 * Files named by CMD's arguments: a data file a program maps (a database,
 * a pack index, a dictionary) is most often one it is given, and loading
 * its libraries is not where such a program's start-up waits.  Only
 * arguments that name a regular file are opened, and only a file with a
 * bitmap is read ahead: an argument that is not a path costs one failed
 * stat(), one that is costs the inode lookup CMD makes anyway.  Objects
 * already prefetched (an executable given as an argument) are not read
 * twice.
 */
static void prefetch_arguments(struct loadset *ls, char *const *args)
{
	for (; *args; args++) {
		struct stat st;

		if (**args == '-' || stat(*args, &st) || !S_ISREG(st.st_mode) ||
		    find_loaded(ls, st.st_dev, st.st_ino) >= 0)
			continue;
		prefetch_object(ls, *args, 0);
	}
}

static void prefetch_for(char *const *cmd)
{
	struct loadset ls = { .gap = PB_WILLNEED_GAP };
	char *exe = find_command(cmd[0]), *interp;

	if (!exe)
		return;		/* execvp() reports it */
	elf_version(EV_CURRENT);
	interp = script_interpreter(exe);
	if (interp)	/* a data file may carry a bitmap in its xattr */
		prefetch_object(&ls, exe, 0);
	prefetch_closure(&ls, interp ? interp : exe);
	prefetch_arguments(&ls, cmd + 1);
	if (pb_verbose)
		pb_note(cmd[0], "%zu files to load, %" PRIu64 " with a bitmap; %" PRIu64
			" extents, %" PRIu64 " bytes requested in all",
			ls.nr, ls.files, ls.extents, ls.bytes);
	loadset_free(&ls);
	free(interp);
	free(exe);
}

int pb_cmd_run(int argc, char **argv)
{
	int ret = parse_flags(argc, argv);
	char **cmd = argv + optind;

	if (ret >= 0)
		return ret;
	if (!cmd[0])
		return pb_usage_error("run: no CMD given");
	pb_willneed_set_skip_cached(true);
	prefetch_for(cmd);
	fflush(NULL);
	execvp(cmd[0], cmd);
	ret = errno == ENOENT ? 127 : 126;	/* as a shell does */
	pb_error_errno(cmd[0], errno == ENOENT ? "command not found" : "cannot execute");
	return ret;
}
