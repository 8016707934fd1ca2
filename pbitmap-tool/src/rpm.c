// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rpm packages: `pbitmap stamp --rpm PKG... | --rpm-all` stamps what
 * packages installed (the catch-up for --noscripts/--notriggers installs),
 * and `pbitmap rpm-verify` runs `rpm -V` and tells a stamped file whose
 * un-stamped content is as packaged from a changed one.
 *
 * rpm runs as a child (posix_spawnp, no shell), with --root and --dbpath
 * passed through.  Paths rpm prints are inside the root: on the host, a
 * file is ROOT + path, resolved inside ROOT (pb_confine(): a symlink in the
 * root must not lead the tool to stamp or vouch for a file outside it).
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pbitmap.h"
#include "cli.h"

extern char **environ;

/* Where the pbitmap package installs the prefix list (%__pbitmap_prefixes). */
#define PB_RPM_MACROS		"/usr/lib/rpm/macros.d/macros.pbitmap"
#define PB_RPM_PREFIX_MACRO	"%__pbitmap_prefixes"
/* Used when the macros file is absent; rpm-scripts/macros.pbitmap has the same. */
static const char *const default_prefixes[] = {
	"/usr/bin/", "/usr/sbin/", "/usr/lib64/", "/usr/libexec/", "/usr/lib/", NULL
};

#define AS_PACKAGED_MARK	"  (pbitmap: content as packaged)"

struct rpm_opts {
	const char *root;	/* NULL: / */
	const char *dbpath;	/* NULL: rpm's default */
	bool all;		/* -a / --rpm-all */
	char **pkgs;		/* NULL-terminated */
};

/* ---- running rpm ------------------------------------------------------------ */

struct rpm_child {
	pid_t pid;
	FILE *out;		/* its standard output */
};

/* Start `rpm [--root R] [--dbpath D] ARGS... [-a | PKG...]`, stdout to a pipe. */
static int rpm_start(struct rpm_child *c, const struct rpm_opts *o, const char *const *args)
{
	size_t n = 0, npkgs = 0;
	const char **argv;
	posix_spawn_file_actions_t fa;
	int fds[2], err;

	while (o->pkgs && o->pkgs[npkgs])
		npkgs++;
	argv = calloc(npkgs + 16, sizeof(*argv));
	if (!argv)
		return pb_error_errno("rpm", "malloc");
	argv[n++] = "rpm";
	if (o->root) {
		argv[n++] = "--root";
		argv[n++] = o->root;
	}
	if (o->dbpath) {
		argv[n++] = "--dbpath";
		argv[n++] = o->dbpath;
	}
	for (; *args; args++)
		argv[n++] = *args;
	if (o->all)
		argv[n++] = "-a";
	else
		for (size_t i = 0; i < npkgs; i++)
			argv[n++] = o->pkgs[i];
	if (pipe2(fds, O_CLOEXEC)) {
		free(argv);
		return pb_error_errno("rpm", "pipe");
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	err = posix_spawnp(&c->pid, "rpm", &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	free(argv);
	close(fds[1]);
	if (err) {
		close(fds[0]);
		errno = err;
		return pb_error_errno("rpm", "cannot run rpm");
	}
	c->out = fdopen(fds[0], "r");
	if (!c->out) {
		close(fds[0]);
		return pb_error_errno("rpm", "fdopen");
	}
	return 0;
}

/* Close the pipe, reap rpm; its exit status, or 128 + signal. */
static int rpm_finish(struct rpm_child *c)
{
	int status;

	fclose(c->out);
	while (waitpid(c->pid, &status, 0) < 0) {
		if (errno != EINTR) {
			pb_error_errno("rpm", "waitpid");
			return 128;
		}
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* ---- options shared by both verbs ----------------------------------------- */

/* "" and "/" are the host's root; trailing slashes go (paths start with one). */
static const char *clean_root(char *root)
{
	size_t len = strlen(root);

	while (len && root[len - 1] == '/')
		root[--len] = '\0';
	return len ? root : NULL;
}

/* ---- stamp ------------------------------------------------------------------ */

/*
 * The prefix list: the words after %__pbitmap_prefixes in ROOT's macros
 * file, or the built-in list when there is no such file.
 */
static char **load_prefixes(const char *root, char **storage)
{
	char path[4096], *line = NULL, **list = NULL;
	size_t cap = 0, n = 0;
	FILE *in;

	snprintf(path, sizeof(path), "%s%s", root ? root : "", PB_RPM_MACROS);
	*storage = NULL;
	in = pb_path_fopen_read(path);
	if (!in)
		return (char **)default_prefixes;
	while (getline(&line, &cap, in) > 0) {
		char *p = line + strspn(line, " \t"), *save = NULL, *w;

		if (strncmp(p, PB_RPM_PREFIX_MACRO, strlen(PB_RPM_PREFIX_MACRO)) ||
		    !strchr(" \t", p[strlen(PB_RPM_PREFIX_MACRO)]))
			continue;
		p += strlen(PB_RPM_PREFIX_MACRO);
		list = calloc(strlen(p) / 2 + 2, sizeof(*list));
		if (!list)
			break;
		for (w = strtok_r(p, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
			list[n++] = w;
		*storage = line;	/* the words point into it */
		line = NULL;
		break;
	}
	fclose(in);
	free(line);
	if (!list || !n) {
		pb_error(path, "no %s line; using the built-in list", PB_RPM_PREFIX_MACRO);
		free(list);
		free(*storage);
		*storage = NULL;
		return (char **)default_prefixes;
	}
	return list;
}

int pb_cmd_stamp(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rpm", no_argument, NULL, 'r' },
		{ "rpm-all", no_argument, NULL, 'A' },
		{ "root", required_argument, NULL, 'R' },
		{ "dbpath", required_argument, NULL, 'D' },
		{ 0 }
	};
	static const char *const list_args[] = { "-q", "--qf", "[%{FILENAMES}\\n]", NULL };
	struct rpm_opts o = { 0 };
	struct rpm_child child;
	bool by_pkg = false;
	char **prefixes, *storage;
	int c, ret, rc;

	while ((c = pb_getopt(argc, argv, "", opts)) != -1) {
		switch (c) {
		case 'r': by_pkg = true; break;
		case 'A': o.all = true; break;
		case 'R': o.root = clean_root(optarg); break;
		case 'D': o.dbpath = optarg; break;
		default: return pb_option_exit(c);
		}
	}
	if (by_pkg == o.all)
		return pb_usage_error("stamp: give --rpm PKG... or --rpm-all");
	if (by_pkg && optind >= argc)
		return pb_usage_error("stamp: --rpm needs at least one PKG");
	if (o.all && optind < argc)
		return pb_usage_error("stamp: --rpm-all takes no PKG");
	if (o.root && pb_confine(o.root))
		return PB_EXIT_FAIL;
	o.pkgs = argv + optind;
	prefixes = load_prefixes(o.root, &storage);
	if (rpm_start(&child, &o, list_args)) {
		ret = PB_EXIT_FAIL;
	} else {
		ret = pb_stamp_lines(child.out, o.root, prefixes);
		rc = rpm_finish(&child);
		if (rc) {
			pb_error(NULL, "rpm exited with status %d while listing the files", rc);
			ret = PB_EXIT_FAIL;
		}
	}
	if (prefixes != (char **)default_prefixes)
		free(prefixes);
	free(storage);
	return ret;
}

/* ---- rpm-verify --------------------------------------------------------------- */

/* rpm's FILEDIGESTALGO codes; an empty or missing tag means MD5. */
static const char *digest_name(const char *code)
{
	static const struct { const char *code, *name; } algos[] = {
		{ "1", "md5" }, { "2", "sha1" }, { "8", "sha256" }, { "9", "sha384" },
		{ "10", "sha512" }, { "11", "sha224" }, { "", "md5" }, { "(none)", "md5" },
	};

	for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++)
		if (!strcmp(code, algos[i].code))
			return algos[i].name;
	return NULL;
}

/* A line of `rpm -V` output. */
struct vline {
	char *text;
	bool stamped;		/* flags S or 5, and the file carries a bitmap */
	bool as_packaged;	/* un-stamped size and digest match the package */
	uint64_t content_size;
	char *host_path;	/* stamped lines: the file on the host */
	const char *algo;	/* digest computed in @hex, or NULL */
	char hex[PB_DIGEST_HEX_MAX];
};

struct vlines {
	struct vline *v;
	size_t n, cap;
};

/* "SM5DLUGTP" flags, two spaces, the attribute letter, a space, the path. */
static const char *flagged_path(const char *text)
{
	if (strlen(text) < 14 || text[9] != ' ' || text[10] != ' ' || text[12] != ' ')
		return NULL;
	for (int i = 0; i < 9; i++)
		if (!strchr("SM5DLUGTP.?", text[i]))
			return NULL;
	return text + 13;
}

static int read_vlines(FILE *in, struct vlines *l)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	while ((len = getline(&line, &cap, in)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		struct vline *v = pb_grow(l->v, l->n, &l->cap, sizeof(*v), 64);

		if (!v) {
			free(line);
			return pb_error_errno(NULL, "malloc");
		}
		l->v = v;
		l->v[l->n++] = (struct vline){ .text = line };
		line = NULL;
		cap = 0;
	}
	free(line);
	return 0;
}

/* Flags S or 5 on a file whose bytes carry a bitmap (ELF): remember it. */
static void look_at(struct vline *l, const char *root)
{
	const char *path = flagged_path(l->text);
	struct pb_file f;

	if (!path || (l->text[0] != 'S' && l->text[2] != '5'))
		return;
	if (asprintf(&l->host_path, "%s%s", root ? root : "", path) < 0) {
		l->host_path = NULL;
		return;
	}
	if (pb_open(&f, l->host_path, PB_OPEN_QUIET | PB_OPEN_ELF_ONLY | PB_OPEN_PROBE))
		return;
	l->stamped = f.store->in_content && f.has_record;
	if (l->stamped)
		l->content_size = pb_content_size(&f);
	pb_close(&f);
}

/* Compare one recorded file (digest, size) with a stamped line of that path. */
static void compare(struct vline *l, const char *algo, const char *digest, uint64_t size)
{
	struct pb_file f;

	if (l->as_packaged || !*digest || size != l->content_size)
		return;
	if (!l->algo || strcmp(l->algo, algo)) {
		l->algo = NULL;
		if (pb_open(&f, l->host_path, PB_OPEN_QUIET | PB_OPEN_ELF_ONLY))
			return;
		if (!pb_digest_original(&f, algo, l->hex))
			l->algo = algo;
		pb_close(&f);
	}
	l->as_packaged = l->algo && !strcmp(l->hex, digest);
}

/* One line of the query: "algo=CODE" or "DIGEST\tSIZE\tPATH". */
static void match_recorded(struct vlines *l, char *line, const char **algo)
{
	char *digest = line, *size, *path, *end;
	unsigned long long sz;

	if (!strncmp(line, "algo=", 5)) {
		*algo = digest_name(line + 5);
		if (!*algo)
			pb_error(NULL, "unknown FILEDIGESTALGO %s: files of that package are not "
				 "compared", line + 5);
		return;
	}
	size = strchr(line, '\t');
	path = size ? strchr(size + 1, '\t') : NULL;
	if (!path || !*algo)
		return;
	*size++ = '\0';
	*path++ = '\0';
	errno = 0;
	sz = strtoull(size, &end, 10);
	if (errno || *end)
		return;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].stamped && !strcmp(flagged_path(l->v[i].text), path))
			compare(&l->v[i], *algo, digest, sz);
}

/* Query the packages' recorded digests and sizes; compare stamped lines. */
static int compare_recorded(struct vlines *l, const struct rpm_opts *o)
{
	static const char *const query_args[] = {
		"-q", "--qf",
		"algo=%{FILEDIGESTALGO}\\n[%{FILEDIGESTS}\\t%{FILESIZES}\\t%{FILENAMES}\\n]",
		NULL
	};
	struct rpm_child child;
	const char *algo = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc;

	if (rpm_start(&child, o, query_args))
		return PB_FAIL;
	while ((len = getline(&line, &cap, child.out)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		match_recorded(l, line, &algo);
	}
	free(line);
	rc = rpm_finish(&child);
	if (rc)
		return pb_error(NULL, "rpm exited with status %d while querying the recorded "
				"digests", rc);
	return 0;
}

/*
 * A package stamped at build time (%pbitmap_ship, rpm-scripts/macros.pbitmap)
 * records the stamped bytes, which change as soon as the kernel learns.  Its
 * manifest, PB_SHIPPED_DIR/NAME.sha256, lists "SHA256 SIZE PATH" of each
 * file's original content: a stamped file whose original content matches
 * its line is as packaged.  The manifest is trusted only when it belongs to
 * the package that owns the file, and rpm -V (this run, which verified
 * that package) did not report it: a manifest dropped in by someone else,
 * or edited, vouches for nothing.
 */
#define PB_SHIPPED_DIR	"/usr/lib/pbitmap/shipped"

/* The name of the package owning @path (rpm -qf), in @name; false if none. */
static bool owner_of(const struct rpm_opts *o, const char *path, char *name, size_t size)
{
	static const char *const args[] = { "-qf", "--qf", "%{NAME}\\n", NULL };
	char *paths[2] = { (char *)path, NULL };
	struct rpm_opts q = { .root = o->root, .dbpath = o->dbpath, .pkgs = paths };
	struct rpm_child child;
	bool ok;

	if (rpm_start(&child, &q, args))
		return false;
	ok = fgets(name, (int)size, child.out) != NULL;
	if (ok)
		name[strcspn(name, "\n")] = '\0';
	return !rpm_finish(&child) && ok && name[0];
}

static bool reported(const struct vlines *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++) {
		const char *p = flagged_path(l->v[i].text);

		if (p && !strcmp(p, path))
			return true;
	}
	return false;
}

static bool shipped_match(const struct rpm_opts *o, const struct vlines *all, struct vline *l)
{
	char pkg[256], owner[256], manifest[PATH_MAX], host[PATH_MAX];
	char line[PATH_MAX + 160], hex[PB_DIGEST_HEX_MAX];
	const char *path = flagged_path(l->text);
	bool ok = false;
	FILE *fp;

	if (!owner_of(o, path, pkg, sizeof(pkg)) ||
	    snprintf(manifest, sizeof(manifest), PB_SHIPPED_DIR "/%s.sha256", pkg) >=
	    (int)sizeof(manifest) ||
	    !owner_of(o, manifest, owner, sizeof(owner)) || strcmp(owner, pkg) ||
	    reported(all, manifest) ||
	    snprintf(host, sizeof(host), "%s%s", o->root ? o->root : "", manifest) >=
	    (int)sizeof(host))
		return false;
	fp = pb_path_fopen_read(host);	/* inside --root */
	while (fp && !ok && fgets(line, sizeof(line), fp)) {
		char want[PB_DIGEST_HEX_MAX];
		unsigned long long size;
		int at = 0;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '-' || sscanf(line, "%128s %llu %n", want, &size, &at) != 2 || !at ||
		    strcmp(line + at, path) || size != l->content_size)
			continue;
		if (!l->algo || strcmp(l->algo, "sha256")) {
			struct pb_file f;

			if (pb_open(&f, l->host_path, PB_OPEN_QUIET | PB_OPEN_ELF_ONLY))
				break;
			if (!pb_digest_original(&f, "sha256", hex)) {
				memcpy(l->hex, hex, sizeof(hex));
				l->algo = "sha256";
			}
			pb_close(&f);
		}
		ok = l->algo && !strcmp(l->algo, "sha256") && !strcmp(l->hex, want);
	}
	if (fp)
		fclose(fp);
	return ok;
}

static void compare_shipped(struct vlines *l, const struct rpm_opts *o)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].stamped && !l->v[i].as_packaged && shipped_match(o, l, &l->v[i]))
			l->v[i].as_packaged = true;
}

/* Print the line as rpm -V would after the comparison; true if still reported. */
static bool print_vline(const struct vline *l)
{
	bool reported = true;

	if (l->as_packaged) {
		char flags[10];

		memcpy(flags, l->text, 9);
		flags[9] = '\0';
		flags[0] = flags[0] == 'S' ? '.' : flags[0];
		flags[2] = flags[2] == '5' ? '.' : flags[2];
		reported = strspn(flags, ".") != 9;
		printf("%s%s%s\n", flags, l->text + 9, AS_PACKAGED_MARK);
	} else {
		printf("%s\n", l->text);
	}
	return reported;
}

static void free_vlines(struct vlines *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].text);
		free(l->v[i].host_path);
	}
	free(l->v);
}

int pb_cmd_rpm_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "root", required_argument, NULL, 'R' },
		{ "dbpath", required_argument, NULL, 'D' },
		{ 0 }
	};
	static const char *const verify_args[] = { "-V", "--nodeps", NULL };
	struct rpm_opts o = { 0 };
	struct vlines l = { 0 };
	struct rpm_child child;
	bool stamped = false, reported = false, cleared = false;
	int c, rc, ret = 0;

	while ((c = pb_getopt(argc, argv, "a", opts)) != -1) {
		switch (c) {
		case 'a': o.all = true; break;
		case 'R': o.root = clean_root(optarg); break;
		case 'D': o.dbpath = optarg; break;
		default: return pb_option_exit(c);
		}
	}
	if (o.all == (optind < argc))
		return pb_usage_error("rpm-verify: give PKG... or -a");
	if (o.root && pb_confine(o.root))
		return PB_EXIT_FAIL;
	o.pkgs = argv + optind;
	if (rpm_start(&child, &o, verify_args))
		return PB_EXIT_FAIL;
	ret = read_vlines(child.out, &l);
	rc = rpm_finish(&child);
	for (size_t i = 0; !ret && i < l.n; i++) {
		look_at(&l.v[i], o.root);
		stamped |= l.v[i].stamped;
	}
	if (!ret && stamped)
		ret = compare_recorded(&l, &o);
	if (!ret && stamped)
		compare_shipped(&l, &o);
	for (size_t i = 0; i < l.n; i++) {
		reported |= print_vline(&l.v[i]);
		cleared |= l.v[i].as_packaged;
	}
	free_vlines(&l);
	if (fflush(stdout))
		ret = pb_error_errno("<stdout>", "write");
	/* rpm's failure with nothing reported (e.g. a failing %verifyscript) stays. */
	if (ret || reported || (rc && !cleared))
		return PB_EXIT_FAIL;
	return PB_EXIT_OK;
}
