# shellcheck shell=bash
# tests/rpm/rpmlib.sh: helpers for tests/rpm/t-*.sh, sourced after ../lib.sh.
#
# Real rpmbuild and real rpm transactions (Debian's rpm 4.18) in alternate
# roots, as ../../shared/notes/rpm.md describes: busybox for /bin/sh and the
# other commands a scriptlet uses, /dev/null, and libc and ld.so for the
# sample programs (copied from the host; pbitmap, statically linked, needs
# no library).  The pbitmap RPM comes from
# `make rpm`; the sample packages are built here, at test time.
#
#   make_root DIR       an empty root with busybox, libraries and an rpm db
#   rpmr ARGS...        rpm --root $R --dbpath /var/lib/rpm ARGS (queries, -V)
#   rpmi ARGS...        the same with --force-debian --nodeps (-i, -U, -e)
#   build_sample VER [ALGO]   compile pbhello and libpbsample.so.1 (version
#                       VER) and build pbsample-VER-1.x86_64.rpm with file
#                       digest algorithm ALGO (rpm's code, default 8 =
#                       SHA-256); prints the package's path.  $SAMPLE_DIR/VER
#                       keeps the unstamped files.
#   sample_output VER   what pbhello of version VER prints (run on the host)
#   is_stamped FILE     FILE (a host path) carries a valid .pbitmap section
#   assert_stamped / assert_unstamped FILE...
#   summary_of FILE     the trigger's summary line in FILE (rpm's stderr)
#   summary_count WHAT FILE  a number of the summary: stamped, already, skipped, errors
#
# $R is the root of the current test (set by make_root).

need rpm rpmbuild rpm2cpio gcc readelf getfattr chroot ldd getcap setcap python3
[[ -x /bin/busybox ]] || fail "/bin/busybox missing (Debian package busybox-static; make deps)"

RPM_ARCH=$(rpm --eval '%{_arch}')
PB_RPM=$(ls "$TOP"/build/rpm/RPMS/"$RPM_ARCH"/pbitmap-[0-9]*."$RPM_ARCH".rpm 2>/dev/null | head -n 1)
[[ -n $PB_RPM && -f $PB_RPM ]] || fail "no pbitmap RPM under build/rpm/RPMS/$RPM_ARCH (make rpm)"
# The binary inside the RPM: its libraries are what the root needs.
[[ -x $TOP/build/pbitmap ]] || fail "build/pbitmap missing (make)"

SAMPLE_DIR=$(tmpdir)

make_root() {
	R=$1
	local lib f
	mkdir -p "$R"/{bin,dev,tmp,var/tmp,etc,usr/lib/x86_64-linux-gnu,lib64} || fail "mkdir $R"
	cp /bin/busybox "$R/bin/" || fail "copy busybox"
	chroot "$R" /bin/busybox --install -s /bin || fail "busybox --install in $R"
	mknod -m 666 "$R/dev/null" c 1 3 || fail "mknod $R/dev/null"
	# The libraries of the sample programs (C, built here): libc and ld.so.
	[[ -x $SAMPLE_DIR/libs-probe ]] || { echo 'int main(void) { return 0; }' |
		gcc -x c -o "$SAMPLE_DIR/libs-probe" - || fail "gcc libs-probe"; }
	for lib in $(ldd "$SAMPLE_DIR/libs-probe" | awk '$3 ~ /^\// { print $3 }'); do
		cp -L "$lib" "$R/usr/lib/x86_64-linux-gnu/" || fail "copy $lib"
	done
	f=$(ldd "$SAMPLE_DIR/libs-probe" | awk '/ld-linux/ { print $1 }')
	[[ -n $f ]] || fail "no dynamic loader in ldd of a C program"
	mkdir -p "$R$(dirname "$f")"
	cp -L "$f" "$R$f" || fail "copy $f"
	ln -s usr/lib "$R/lib" 2>/dev/null || true
	rpm --root "$R" --dbpath /var/lib/rpm --initdb || fail "rpm --initdb in $R"
}

rpmr() {
	rpm --root "$R" --dbpath /var/lib/rpm "$@"
}

rpmi() {
	rpm --root "$R" --dbpath /var/lib/rpm --force-debian --nodeps "$@"
}

# Build a package from a spec body and a payload directory; prints the RPM.
# build_rpm NAME VERSION PAYLOAD FILES_SECTION [EXTRA_DEFINES...]
build_rpm() {
	local name=$1 version=$2 payload=$3 files=$4
	shift 4
	local top log
	top=$(mktemp -d "$SAMPLE_DIR/rb.XXXXXX")
	log=$top/rpmbuild.log
	mkdir -p "$top/SPECS"
	cat >"$top/SPECS/$name.spec" <<SPEC
Name: $name
Version: $version
Release: 1
Summary: pbitmap test package
License: MIT
AutoReqProv: no
%global debug_package %{nil}
%global __os_install_post %{nil}
%description
A package built by pbitmap's tests/rpm.
%install
mkdir -p %{buildroot}
cp -a $payload/. %{buildroot}/
%files
$files
SPEC
	rpmbuild --define "_topdir $top" "$@" -bb "$top/SPECS/$name.spec" >"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; fail "rpmbuild of $name-$version failed"; }
	ls "$top/RPMS/$RPM_ARCH/$name-$version-1.$RPM_ARCH.rpm" || fail "rpmbuild made no $name RPM"
}

# pbhello links libpbsample.so.1 (found through its RUNPATH in /usr/lib64),
# prints a greeting and a checksum of its own code; libpbsample also gets a
# symlink, a script and an object file (non-ELF-program paths under the
# prefixes) and a data file outside them.
build_sample() {
	local ver=$1 algo=${2:-8}
	local src=$SAMPLE_DIR/$ver
	local p=$src/payload
	if [[ ! -d $p ]]; then
		mkdir -p "$p/usr/bin" "$p/usr/lib64/pbsample" "$p/usr/share/pbsample"
		cat >"$src/lib.c" <<C
#include <stdio.h>
const char *pbsample_greeting(void) { return "hello from pbsample $ver"; }
unsigned long pbsample_sum(const unsigned char *p, unsigned long n)
{
	unsigned long s = 0;
	while (n--)
		s = s * 31 + *p++;
	return s;
}
C
		cat >"$src/main.c" <<'C'
#include <stdio.h>
const char *pbsample_greeting(void);
unsigned long pbsample_sum(const unsigned char *p, unsigned long n);
int main(void)
{
	printf("%s; code sum %lx\n", pbsample_greeting(),
	       pbsample_sum((const unsigned char *)main, 64));
	return 0;
}
C
		gcc -O2 -shared -fPIC -Wl,-soname,libpbsample.so.1 -o "$p/usr/lib64/libpbsample.so.1" "$src/lib.c" &&
			gcc -O2 -o "$p/usr/bin/pbhello" "$src/main.c" -L"$p/usr/lib64" -l:libpbsample.so.1 \
				-Wl,-rpath,/usr/lib64 &&
			gcc -c -o "$p/usr/lib64/pbsample/plugin.o" "$src/lib.c" || fail "gcc (sample $ver)"
		ln -s libpbsample.so.1 "$p/usr/lib64/libpbsample.so"
		printf '#!/bin/sh\nexec /usr/bin/pbhello "$@"\n' >"$p/usr/bin/pbhello-sh"
		chmod 755 "$p/usr/bin/pbhello-sh"
		echo "pbsample $ver data" >"$p/usr/share/pbsample/data.txt"
	fi
	build_rpm pbsample "$ver" "$p" '%caps(cap_net_raw=ep) /usr/bin/pbhello
/usr/bin/pbhello-sh
/usr/lib64/libpbsample.so.1
/usr/lib64/libpbsample.so
/usr/lib64/pbsample
/usr/share/pbsample' --define "_binary_filedigest_algorithm $algo"
}

sample_output() {
	local p=$SAMPLE_DIR/$1/payload
	LD_LIBRARY_PATH=$p/usr/lib64 "$p/usr/bin/pbhello" || fail "pbhello $1 does not run on the host"
}

is_stamped() {
	"$PBITMAP" verify -q "$1" >/dev/null 2>&1
}

assert_stamped() {
	local f
	for f in "$@"; do
		is_stamped "$f" || fail "$f is not stamped: $("$PBITMAP" verify "$f" 2>&1)"
	done
}

assert_unstamped() {
	local f
	for f in "$@"; do
		! is_stamped "$f" || fail "$f is stamped"
		[[ -z $(readelf -S "$f" 2>/dev/null | grep -F .pbitmap) ]] || fail "$f has a .pbitmap section"
	done
}

summary_of() {
	local s
	s=$(grep -E '^pbitmap: [0-9]+ files stamped, ' "$1")
	[[ $(printf '%s\n' "$s" | grep -c .) == 1 ]] ||
		fail "expected one summary line from the trigger, got: $(cat "$1")"
	printf '%s\n' "$s"
}

summary_count() {
	local what=$1 s
	s=$(summary_of "$2") || exit 1
	case $what in
	stamped) sed -E 's/^pbitmap: ([0-9]+) files stamped.*/\1/' <<<"$s" ;;
	already) sed -E 's/.*, ([0-9]+) already stamped,.*/\1/' <<<"$s" ;;
	skipped) sed -E 's/.*, ([0-9]+) skipped,.*/\1/' <<<"$s" ;;
	errors) sed -E 's/.*, ([0-9]+) errors,.*/\1/' <<<"$s" ;;
	seconds) sed -E 's/.*, in ([0-9.]+) s$/\1/' <<<"$s" ;;
	*) fail "summary_count: unknown $what" ;;
	esac
}

# assert_summary FILE STAMPED ALREADY SKIPPED ERRORS
assert_summary() {
	local f=$1
	[[ $(summary_count stamped "$f") == "$2" && $(summary_count already "$f") == "$3" &&
		$(summary_count skipped "$f") == "$4" && $(summary_count errors "$f") == "$5" ]] ||
		fail "trigger summary: expected $2 stamped, $3 already, $4 skipped, $5 errors; got: $(summary_of "$f")"
}
