# shellcheck shell=bash
# tests/tool/coldstart.sh: cold-start read requests of a program, on a disk
# of its own.  Sourced after ../lib.sh (by t-prefetch.sh, and by hand for
# the figures in the issue 14 report).
#
# A small ext4 image on a loop device holds a chroot: ld.so, a program
# (`prog`) linking six libraries (libc, libm, libbz2, liblzma, libgmp,
# libsqlite3), and the launchers under test with their libraries.  Every
# file a cold start reads is on that device, so /sys/block/loopN/stat
# counts all of them, the launcher's own start-up included; read_ahead_kb
# is the kernel default of 128.  The loop device uses direct I/O: the
# image's pages are not cached twice on the host.
#
#   coldfs_setup DIR     image, loop device and chroot under DIR; sets
#                        CS_ROOT (the mount point) and CS_DEV (loopN)
#   coldfs_add_binary F  copy the ELF binary F and the libraries ldd lists
#                        for it into /usr/bin and the library directory
#   coldfs_learn         stamp every ELF file of the chroot and learn
#                        `prog` with `pbitmap record` (three runs)
#   cold_reads CMD...    drop every cache, run CMD (a command line inside
#                        the chroot), print "READS MILLISECONDS"
#   median N...          the median of the numbers
# Needs root (losetup, mount, drop_caches).

need losetup mkfs.ext4 mount umount chroot gcc ldd sync ldconfig
[[ $(id -u) == 0 ]] || fail "coldstart.sh needs root (loop device, drop_caches)"

CS_LIBDIR=/usr/lib/x86_64-linux-gnu

coldfs_setup() {
	local dir=$1 img dev
	[[ -n $dir && -d $dir ]] || fail "coldfs_setup: no directory '$dir'"
	img=$dir/coldfs.img
	truncate -s 96M "$img" || fail "truncate $img"
	mkfs.ext4 -q -F "$img" || fail "mkfs.ext4 $img"
	dev=$(losetup -f --show --direct-io=on "$img") || fail "losetup $img"
	at_exit "losetup -d $dev"
	CS_DEV=${dev#/dev/}
	CS_ROOT=$dir/mnt
	mkdir -p "$CS_ROOT" || fail "mkdir"
	mount "$dev" "$CS_ROOT" || fail "mount $dev"
	at_exit "umount -l $CS_ROOT"
	echo 128 >"/sys/block/$CS_DEV/queue/read_ahead_kb" || fail "read_ahead_kb of $CS_DEV"
	mkdir -p "$CS_ROOT"{/usr/bin,$CS_LIBDIR,/lib64,/proc,/tmp,/etc} || fail "mkdir"
	ln -s usr/lib "$CS_ROOT/lib" || fail "ln"
	ln -s usr/bin "$CS_ROOT/bin" || fail "ln"
	cp /lib64/ld-linux-x86-64.so.2 "$CS_ROOT/lib64/" || fail "cp ld.so"
	# Debian's ld.so.conf; the cache is built once the libraries are in.
	mkdir -p "$CS_ROOT/etc/ld.so.conf.d" || fail "mkdir"
	echo 'include /etc/ld.so.conf.d/*.conf' >"$CS_ROOT/etc/ld.so.conf"
	echo "$CS_LIBDIR" >"$CS_ROOT/etc/ld.so.conf.d/x86_64-linux-gnu.conf"

	# Libraries the launchers do not link themselves (libc aside), so none
	# of them is already cached when the program starts.
	cat >"$dir/prog.c" <<'C'
#include <stdio.h>
#include <string.h>
/* One call into each library, so each is relocated and its code touched. */
double cos(double);
const char *BZ2_bzlibVersion(void);
const char *lzma_version_string(void);
extern const char *const __gmp_version;
void __gmpz_init_set_ui(void *, unsigned long);
void __gmpz_mul(void *, const void *, const void *);
unsigned long __gmpz_get_ui(const void *);
int sqlite3_open(const char *, void **);
int sqlite3_exec(void *, const char *, int (*)(void *, int, char **, char **), void *, char **);
int sqlite3_close(void *);

static int row(void *arg, int n, char **val, char **col)
{
	(void)n; (void)col;
	snprintf(arg, 32, "%s", val[0]);
	return 0;
}

int main(int argc, char **argv)
{
	volatile double x = argc;
	char big[64] = { 0 }, sum[32] = "";
	void *db = NULL;

	__gmpz_init_set_ui(big, 12345);
	__gmpz_mul(big, big, big);
	if (sqlite3_open(":memory:", &db) ||
	    sqlite3_exec(db, "create table t(x); insert into t values (6 * 7); select sum(x) from t",
			 row, sum, NULL))
		return 1;
	sqlite3_close(db);
	printf("%s: cos %.3f bz2 %.5s lzma %s gmp %s %lu sqlite %s\n", argv[0], cos(x),
	       BZ2_bzlibVersion(), lzma_version_string(), __gmp_version, __gmpz_get_ui(big), sum);
	return 0;
}
C
	gcc -O2 -o "$dir/prog" "$dir/prog.c" $CS_LIBDIR/libm.so.6 $CS_LIBDIR/libbz2.so.1.0 \
		$CS_LIBDIR/liblzma.so.5 $CS_LIBDIR/libgmp.so.10 $CS_LIBDIR/libsqlite3.so.0 ||
		fail "gcc prog"
	coldfs_add_binary "$dir/prog"
	[[ $(ldd "$CS_ROOT/usr/bin/prog" | grep -c '=> /') == 6 ]] ||
		fail "prog does not link six libraries: $(ldd "$CS_ROOT/usr/bin/prog")"
	chroot "$CS_ROOT" /usr/bin/prog >/dev/null || fail "prog does not run in the chroot"
}

coldfs_add_binary() {
	local lib
	cp "$1" "$CS_ROOT/usr/bin/" || fail "cp $1"
	for lib in $(ldd "$1" 2>/dev/null | awk '$3 ~ /^\// { print $3 }'); do
		[[ -e $CS_ROOT$CS_LIBDIR/${lib##*/} ]] || cp -L "$lib" "$CS_ROOT$CS_LIBDIR/" ||
			fail "cp $lib"
	done
	ldconfig -r "$CS_ROOT" || fail "ldconfig -r $CS_ROOT"
}

coldfs_learn() {
	local f
	for f in "$CS_ROOT"/usr/bin/* "$CS_ROOT"$CS_LIBDIR/* "$CS_ROOT"/lib64/*; do
		"$PBITMAP" add -q "$f" || fail "pbitmap add $f"
	done
	mount -t proc proc "$CS_ROOT/proc" || fail "mount proc"
	for _ in 1 2 3; do
		chroot "$CS_ROOT" /usr/bin/pbitmap record -q -- /usr/bin/prog >/dev/null 2>"$CS_ROOT/tmp/rec.err" ||
			{ umount "$CS_ROOT/proc"; fail "pbitmap record prog: $(cat "$CS_ROOT/tmp/rec.err")"; }
	done
	umount "$CS_ROOT/proc" || fail "umount proc"
	for f in prog; do
		"$PBITMAP" show --json "$CS_ROOT/usr/bin/$f" >"$CS_ROOT/tmp/show.json" || fail "show $f"
	done
}

cold_reads() {
	local before after t0 t1
	sync
	echo 3 >/proc/sys/vm/drop_caches || fail "drop_caches"
	read -r before _ </sys/block/"$CS_DEV"/stat
	t0=$(date +%s%N)
	chroot "$CS_ROOT" "$@" >/dev/null 2>"$CS_ROOT/tmp/cold.err" ||
		fail "cold run of $* failed: $(cat "$CS_ROOT/tmp/cold.err")"
	t1=$(date +%s%N)
	read -r after _ </sys/block/"$CS_DEV"/stat
	echo "$((after - before)) $(((t1 - t0) / 1000000))"
}

median() {
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
