// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Opening files safely and modifying them without losing anything.
 *
 * A writer holds the writers' lock on the file from before it reads the
 * record until its change is published (replace.c, docs/FORMAT.md).  An
 * ELF file is changed in a copy renamed over it, all at once (replace.c),
 * except a learned generation, which goes into the record slot that is
 * not current, in place, where that is safe (pb_save_learned(),
 * elfstore.c); a data file's record is one extended attribute, replaced
 * by a single fsetxattr() on the file itself (its content, inode and
 * links stay).
 * Files that must not change are refused before anything is written.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "pbitmap.h"

#define XATTR_IMA	"security.ima"
/* Attempts to open a file that other writers keep replacing meanwhile. */
#define LOCK_ATTEMPTS	1000

static const char *file_type(mode_t mode)
{
	if (S_ISDIR(mode))
		return "is a directory";
	if (S_ISFIFO(mode))
		return "is a FIFO, not a regular file";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "is a device, not a regular file";
	if (S_ISSOCK(mode))
		return "is a socket, not a regular file";
	return "is not a regular file";
}

/* The inode flags that forbid writing, or NULL. */
static const char *write_protection(int fd)
{
	struct statx stx;
	int attr = 0;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0) {
		if (stx.stx_attributes & STATX_ATTR_VERITY)
			return "is an fs-verity file (its content is sealed)";
		if (stx.stx_attributes & STATX_ATTR_IMMUTABLE)
			return "is immutable (chattr +i)";
		if (stx.stx_attributes & STATX_ATTR_APPEND)
			return "is append-only (chattr +a)";
	}
	if (ioctl(fd, FS_IOC_GETFLAGS, &attr) == 0) {
		if (attr & FS_IMMUTABLE_FL)
			return "is immutable (chattr +i)";
		if (attr & FS_APPEND_FL)
			return "is append-only (chattr +a)";
	}
	return NULL;
}

/* Why opening for writing failed, in the user's terms. */
static int open_failed(struct pb_file *f, int err)
{
	const char *why = NULL;
	int fd;

	switch (err) {
	case EROFS:
		return pb_skip(f->path, "is on a read-only filesystem");
	case EPERM:
	case EACCES:
		fd = pb_path_open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
				  ((f->open_flags & PB_OPEN_FOLLOW) ? 0 : O_NOFOLLOW), 0);
		if (fd >= 0) {
			why = write_protection(fd);
			close(fd);
		}
		if (why)
			return pb_skip(f->path, "%s", why);
		break;
	}
	errno = err;
	return pb_error_errno(f->path, "cannot open for writing");
}

/* Refuse what must not be modified even though it could be opened. */
static int check_writable(struct pb_file *f)
{
	struct statvfs vfs;
	const char *why = write_protection(f->fd);

	if (why)
		return pb_skip(f->path, "%s", why);
	if (fgetxattr(f->fd, XATTR_IMA, NULL, 0) >= 0)
		return pb_skip(f->path, "carries an IMA signature (security.ima); "
			       "changing the file would fail its appraisal");
	if (fstatvfs(f->fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
		return pb_skip(f->path, "is on a read-only filesystem");
	/*
	 * The file is open for reading only (an open for writing would make
	 * a concurrent exec fail): ask whether the caller could write it.
	 */
	if (faccessat(f->fd, "", W_OK, AT_EMPTY_PATH | AT_EACCESS))
		return open_failed(f, errno);
	return 0;
}

static int check_path(struct pb_file *f, struct stat *lst)
{
	char target[256];
	ssize_t n;

	if (pb_path_lstat(f->path, lst))
		return pb_error_errno(f->path, "cannot access");
	if (S_ISLNK(lst->st_mode)) {
		if (f->open_flags & PB_OPEN_QUIET)
			return PB_NONE;
		if (f->open_flags & PB_OPEN_FOLLOW)
			return 0;
		n = pb_path_readlink(f->path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		return pb_error(f->path, "is a symbolic link (to %s): name the file itself, "
				"or use -L to follow links", n > 0 ? target : "?");
	}
	if (!S_ISREG(lst->st_mode)) {
		if (f->open_flags & PB_OPEN_QUIET)
			return PB_NONE;
		return pb_error(f->path, "%s", file_type(lst->st_mode));
	}
	return 0;
}

static int open_fd(struct pb_file *f, const struct stat *lst)
{
	unsigned int flags = f->open_flags;
	int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
		     ((flags & PB_OPEN_FOLLOW) ? 0 : O_NOFOLLOW);

	/* O_NONBLOCK: a FIFO swapped in after lstat() must not hang us. */
	f->fd = pb_path_open(f->path, oflags, 0);
	if (f->fd < 0)
		return pb_error_errno(f->path, "cannot open");
	if (fstat(f->fd, &f->st))
		return pb_error_errno(f->path, "fstat");
	if (!S_ISREG(f->st.st_mode)) {
		if (flags & PB_OPEN_QUIET)
			return PB_NONE;
		return pb_error(f->path, "%s", file_type(f->st.st_mode));
	}
	/* Replaced since lstat(): writers rename new versions over files. */
	if (!S_ISLNK(lst->st_mode) &&
	    (f->st.st_dev != lst->st_dev || f->st.st_ino != lst->st_ino))
		return 1;
	if (fcntl(f->fd, F_SETFL, fcntl(f->fd, F_GETFL) & ~O_NONBLOCK))
		return pb_error_errno(f->path, "fcntl");
	return 0;
}

static int open_common(struct pb_file *f, const char *path, unsigned int flags,
		       const struct stat *want)
{
	struct stat lst;
	int ret;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->path = path;
	f->open_flags = flags;
	/*
	 * Open what the name leads to; a writer, what it leads to once the
	 * lock is held.  Another writer may rename a new version over the name
	 * meanwhile: then again, with that one.
	 */
	for (unsigned int attempt = 1;; attempt++) {
		ret = check_path(f, &lst);
		if (!ret)
			ret = open_fd(f, &lst);
		if (!ret && (flags & (PB_OPEN_WRITE | PB_OPEN_SHARED_LOCK)))
			ret = pb_lock_current(f);
		if (ret != 1)
			break;
		close(f->fd);
		f->fd = -1;
		if (attempt == LOCK_ATTEMPTS) {
			ret = pb_error(path, "keeps being replaced by other programs (tried %u times)", LOCK_ATTEMPTS);
			break;
		}
	}
	/* not the file wanted: nothing of it read, not even its header */
	if (!ret && want && (f->st.st_dev != want->st_dev || f->st.st_ino != want->st_ino)) {
		pb_close(f);
		errno = ESTALE;
		return PB_NONE;
	}
	if (!ret && (flags & PB_OPEN_WRITE))
		ret = check_writable(f);
	if (!ret)
		ret = pb_elf_inspect(f);
	if (ret == PB_NONE && f->kind == PB_KIND_ELF) {
		pb_close(f);	/* an ELF file rejected while probing */
		return ret;
	}
	if (ret == PB_NONE && !(flags & (PB_OPEN_QUIET | PB_OPEN_ELF_ONLY))) {
		f->kind = PB_KIND_DATA;
		ret = pb_xattr_load(f);
	}
	if (ret)
		pb_close(f);
	else
		f->store = f->kind == PB_KIND_ELF ? &pb_elf_store : &pb_xattr_store;
	/*
	 * Readers take no lock, and a record rewritten in place while they
	 * read it (the kernel's write-back, docs/FORMAT.md "Locking") fails
	 * its checksum.  Before calling it damaged, read it once more under
	 * the lock, shared: the writer holds it exclusively while it writes.
	 */
	if (!ret && f->damage && (flags & PB_OPEN_RECHECK) && !(flags & PB_OPEN_WRITE)) {
		if (pb_verbose)
			pb_note(path, "invalid bitmap (%s): reading it again under the lock",
				f->damage);
		pb_close(f);
		return open_common(f, path, (flags & ~PB_OPEN_RECHECK) | PB_OPEN_SHARED_LOCK, want);
	}
	return ret;
}

int pb_open(struct pb_file *f, const char *path, unsigned int flags)
{
	return open_common(f, path, flags, NULL);
}

int pb_open_same(struct pb_file *f, const char *path, unsigned int flags, dev_t dev, ino_t ino)
{
	struct stat want = { .st_dev = dev, .st_ino = ino };

	return open_common(f, path, flags, &want);
}

void pb_close(struct pb_file *f)
{
	pb_discard(f);
	pb_record_free(&f->rec);
	pb_elf_free(f);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/* ---- operations ---------------------------------------------------------- */

/*
 * The verbs' operations, the same for both stores: what differs between an
 * ELF section and an attribute is in f->store (the two stores are below).
 */

static void apply_defaults(struct pb_params *p)
{
	if (!p->nr_planes)
		p->nr_planes = PB_DEFAULT_PLANES;
	if (!p->threshold)
		p->threshold = p->nr_planes < PB_DEFAULT_THRESHOLD ? p->nr_planes :
			       PB_DEFAULT_THRESHOLD;
	if (!p->xattr_max)
		p->xattr_max = PB_XATTR_MAX_DEFAULT;
}

static bool same_geometry(const struct pb_file *f, const struct pb_params *p)
{
	const struct pbitmap_header *h = pb_hdr(&f->rec);

	return p->nr_planes == h->nr_planes && p->page_shift == h->page_shift &&
	       p->plan_size == le32toh(h->plan_size);
}

static bool nothing_to_change(const struct pb_file *f, const struct pb_params *p)
{
	const struct pbitmap_header *h = pb_hdr(&f->rec);

	return same_geometry(f, p) && p->threshold == h->threshold &&
	       p->flags == le32toh(h->flags);
}

/*
 * Change what fits in place (threshold, flags); else re-stamp, carrying the
 * learned generations over.  Within one change: an ELF file goes from the
 * old stamp to the new one in a single commit, and a failure (a full disk)
 * leaves the old stamp.
 */
static int restamp(struct pb_file *f, struct pb_params *p)
{
	struct pbitmap_header *h = pb_hdr(&f->rec);
	struct pb_record old = f->rec;
	int ret;

	if (same_geometry(f, p)) {
		h->threshold = (uint8_t)p->threshold;
		h->flags = htole32(p->flags);
		return f->store->write(f);
	}
	f->rec = (struct pb_record){ 0 };
	f->has_record = false;
	ret = f->store->make_room(f);
	p->flags &= ~PBITMAP_F_XATTR;
	p->carry = &old;
	if (!ret)
		ret = f->store->stamp(f, p);
	pb_record_free(&old);
	return ret;
}

/* What the user did not ask to change stays as the existing record has it. */
static void inherit_params(const struct pb_file *f, const struct pb_params *given,
			   struct pb_params *p)
{
	const struct pbitmap_header *h = pb_hdr(&f->rec);

	*p = *given;
	if (!given->nr_planes)
		p->nr_planes = h->nr_planes;
	if (!given->threshold)
		p->threshold = h->threshold <= p->nr_planes ? h->threshold : p->nr_planes;
	if (!given->set_flags)
		p->flags = le32toh(h->flags) & ~PBITMAP_F_XATTR;
	if (!given->page_shift)
		p->page_shift = h->page_shift;
	p->plan_size = pb_plan_size_for(f, given);
	if (f->store->restamp_params)
		f->store->restamp_params(f, given, p);
}

/*
 * A stamped ELF file whose marker was lost (cp without --preserve=xattr,
 * an archive without attributes) or is stale: the section is intact, so
 * the marker is simply made again, on the file itself, under the lock.
 * An attribute change rewrites nothing and keeps the inode, so a running
 * program is not disturbed.
 */
static int restore_marker(struct pb_file *f)
{
	struct pbitmap_marker m;

	if (f->marker == PB_MARKER_UNSUPPORTED) {
		pb_marker_warn_unsupported(f);
		return 0;
	}
	if (!pb_elf_marker_want(f, &m))
		return pb_error(f->path, "internal error: no marker for a stamped file");
	if (f->marker == PB_MARKER_STALE)
		pb_note(f->path, "replacing its stale " PBITMAP_XATTR_NAME " marker (%s)",
			f->marker_why);
	else
		pb_note(f->path, "restoring its missing " PBITMAP_XATTR_NAME " marker");
	return pb_marker_write(f, &m);
}

size_t pb_default_plan_size(const struct pb_file *f)
{
	return f->store->is_program && f->store->is_program(f) ? PB_DEFAULT_PLAN_SIZE : 0;
}

/*
 * Without --plan-size, an executable stamped before plan areas were the
 * default (or with --plan-size 0) gets the default area at its next
 * re-stamp, its generations carried over; an area it has is kept as it
 * is, never removed or shrunk.  The record cannot tell an opt-out from an
 * older stamp: --plan-size 0 must be given again to keep a file without.
 */
size_t pb_plan_size_for(const struct pb_file *f, const struct pb_params *p)
{
	size_t have = f->has_record ? le32toh(pb_hdr(&f->rec)->plan_size) : 0;

	if (p->set_plan)
		return p->plan_size;
	return have ? have : pb_default_plan_size(f);
}

int pb_stamp(struct pb_file *f, const struct pb_params *params)
{
	const struct pb_store_ops *store = f->store;
	struct pb_params p = *params;
	int ret;

	if (f->has_record)
		inherit_params(f, params, &p);
	else
		p.plan_size = pb_plan_size_for(f, params);
	apply_defaults(&p);
	if (p.threshold > p.nr_planes)
		return pb_error(f->path, "threshold %u is more than the %u generations",
				p.threshold, p.nr_planes);
	if (f->has_record && nothing_to_change(f, &p)) {
		if (store->has_marker && f->marker != PB_MARKER_OK)
			return restore_marker(f);
		if (pb_verbose)
			pb_note(f->path, "already stamped");
		return 0;
	}
	ret = store->begin_change(f);
	if (ret)
		return ret;
	if (f->has_record)
		return store->end_change(f, restamp(f, &p));
	if (f->damage) {
		pb_note(f->path, "replacing a damaged bitmap (%s)", f->damage);
		ret = store->make_room(f);
	}
	if (!ret)
		ret = store->stamp(f, &p);
	return store->end_change(f, ret);
}

int pb_unstamp(struct pb_file *f)
{
	return f->store->unstamp(f);
}

int pb_save(struct pb_file *f)
{
	int ret = f->store->begin_change(f);

	if (ret)
		return ret;
	return f->store->end_change(f, f->store->write(f));
}

int pb_save_learned(struct pb_file *f)
{
	const char *why = "the store has no slot to write in place";
	int ret = PB_NONE;

	f->saved_in_place = false;
	f->copy_why = NULL;
	if (f->store->save_in_place)
		ret = f->store->save_in_place(f, &why);
	if (ret != PB_NONE) {
		f->saved_in_place = !ret;
		if (!ret && pb_verbose && f->store->slot) {
			uint64_t slot_offset, section_size;

			pb_note(f->path, "written in place, into slot %d (the same inode)",
				f->store->slot(f, &slot_offset, &section_size));
		} else if (!ret && pb_verbose) {
			pb_note(f->path, "written in place (the same inode)");
		}
		return ret;
	}
	f->copy_why = why;
	if (pb_verbose)
		pb_note(f->path, "not written in place (%s): a copy renamed over it, a new inode",
			why);
	return pb_save(f);
}

uint64_t pb_content_size(const struct pb_file *f)
{
	return f->store->content_size(f);
}

int pb_read_original(struct pb_file *f,
		     int (*sink)(void *ctx, const void *buf, size_t len),
		     void *ctx)
{
	return f->store->read_original(f, sink, ctx);
}

/* ---- the ELF store: a .pbitmap section --------------------------------- */

/* Re-read the file's state after its layout changed. */
static int reinspect(struct pb_file *f)
{
	pb_record_free(&f->rec);
	pb_elf_free(f);
	f->has_record = false;
	f->interrupted = false;
	f->damage = NULL;
	if (fstat(f->fd, &f->st))
		return pb_error_errno(f->path, "fstat");
	return pb_elf_inspect(f);
}

/*
 * An ELF file is changed in a private copy (pb_stage), published at the end
 * in one step (pb_commit) or dropped on error: the file is then as it was.
 */
static int elf_begin_change(struct pb_file *f)
{
	return pb_stage(f);
}

/*
 * The marker a stamped ELF file carries (marker.c) is part of the change:
 * set on the copy, from the copy's own layout, before it is synced and
 * renamed into place, so the name never leads to a stamped file without
 * its marker or with a stale one (replace.c does not copy the old one).
 */
static int elf_end_change(struct pb_file *f, int ret)
{
	struct pbitmap_marker m;

	if (!ret)
		ret = pb_marker_write(f, pb_elf_marker_want(f, &m) ? &m : NULL);
	if (ret) {
		pb_discard(f);
		return ret;
	}
	return pb_commit(f);
}

/* Remove the old section (or an interrupted stamp's tail), in the copy. */
static int elf_make_room(struct pb_file *f)
{
	int ret = pb_elf_unstamp(f);

	if (ret == PB_NONE)
		ret = 0;
	return ret ? ret : reinspect(f);
}

static int elf_stamp(struct pb_file *f, const struct pb_params *given)
{
	struct pb_params p = *given;
	int ret;

	if (f->interrupted) {
		pb_note(f->path, "removing the tail of an interrupted stamp");
		ret = elf_make_room(f);
		if (ret)
			return ret;
	}
	if (!p.page_shift)
		p.page_shift = PBITMAP_MIN_PAGE_SHIFT;
	ret = pb_elf_stamp(f, &p);
	/* Later saves go through the new section: look at the file afresh. */
	if (!ret)
		ret = reinspect(f);
	return ret;
}

static int elf_unstamp(struct pb_file *f)
{
	int ret;

	if (!pb_elf_is_stamped(f) && !f->interrupted) {
		if (f->marker != PB_MARKER_STRAY)
			return PB_NONE;
		/* A marker without a stamp (the file was changed in place): drop it. */
		pb_note(f->path, "removing a " PBITMAP_XATTR_NAME " marker it carries without a bitmap");
		return pb_marker_write(f, NULL);
	}
	ret = elf_begin_change(f);
	if (ret)
		return ret;
	return elf_end_change(f, pb_elf_unstamp(f));
}

static void elf_describe(const struct pb_file *f, char *buf, size_t size)
{
	uint64_t slot_offset, section_size;
	int slot = pb_elf_slot(f, &slot_offset, &section_size);

	snprintf(buf, size, "ELF section %s at offset %#" PRIx64 ", %" PRIu64
		 " bytes: 2 slots of %zu bytes, slot %d current",
		 PBITMAP_SECTION_NAME, pb_elf_record_offset(f), section_size, f->rec.size, slot);
}

const struct pb_store_ops pb_elf_store = {
	.name = "elf",
	.in_content = true,
	.has_marker = true,
	.begin_change = elf_begin_change,
	.end_change = elf_end_change,
	.stamp = elf_stamp,
	.make_room = elf_make_room,
	.write = pb_elf_save,
	.save_in_place = pb_elf_save_in_place,
	.is_program = pb_elf_is_program,
	.unstamp = elf_unstamp,
	.content_size = pb_elf_content_size,
	.read_original = pb_elf_read_original,
	.record_offset = pb_elf_record_offset,
	.slot = pb_elf_slot,
	.describe = elf_describe,
};

/* ---- the xattr store: the user.pbitmap attribute of a data file --------- */

/* Each write of a data file's record is one fsetxattr(): nothing to stage. */
static int data_begin_change(struct pb_file *f)
{
	(void)f;
	return 0;
}

static int data_end_change(struct pb_file *f, int ret)
{
	(void)f;
	return ret;
}

/*
 * An old or damaged attribute stays until the new one replaces it, in one
 * fsetxattr(): a failed stamp leaves it as it was.
 */
static int data_make_room(struct pb_file *f)
{
	(void)f;
	return 0;
}

/* A data file's record is always written in place: one fsetxattr() on the file. */
static int data_save_in_place(struct pb_file *f, const char **why)
{
	(void)why;
	return pb_xattr_save(f);
}

/* More generations may need a coarser granule to fit the attribute. */
static void data_restamp_params(const struct pb_file *f, const struct pb_params *given,
				struct pb_params *p)
{
	unsigned int fit = pb_xattr_page_shift((uint64_t)f->st.st_size, p->nr_planes,
					       p->xattr_max ? p->xattr_max :
					       PB_XATTR_MAX_DEFAULT);

	if (!given->page_shift && fit > p->page_shift)
		p->page_shift = fit;
	p->flags |= PBITMAP_F_XATTR;
}

static uint64_t data_content_size(const struct pb_file *f)
{
	return (uint64_t)f->st.st_size;
}

/* A data file's bytes are its original: the record is beside them. */
static int data_read_original(struct pb_file *f,
			      int (*sink)(void *ctx, const void *buf, size_t len),
			      void *ctx)
{
	size_t chunk = 1 << 20;
	unsigned char *buf;
	int ret = 0;

	buf = malloc(chunk);
	if (!buf)
		return pb_error_errno(f->path, "malloc");
	for (off_t off = 0;;) {
		ssize_t n = pread(f->fd, buf, chunk, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = pb_error_errno(f->path, "read");
			break;
		}
		if (n == 0)
			break;
		if (sink(ctx, buf, (size_t)n)) {
			ret = PB_FAIL;
			break;
		}
		off += n;
	}
	free(buf);
	return ret;
}

static void data_describe(const struct pb_file *f, char *buf, size_t size)
{
	snprintf(buf, size, "extended attribute %s, %zu bytes uncompressed",
		 PBITMAP_XATTR_NAME, f->rec.size);
}

const struct pb_store_ops pb_xattr_store = {
	.name = "xattr",
	.in_content = false,
	.has_marker = false,
	.begin_change = data_begin_change,
	.end_change = data_end_change,
	.stamp = pb_xattr_stamp,
	.make_room = data_make_room,
	.write = pb_xattr_save,
	.save_in_place = data_save_in_place,
	.restamp_params = data_restamp_params,
	.unstamp = pb_xattr_unstamp,
	.content_size = data_content_size,
	.read_original = data_read_original,
	.describe = data_describe,
};
