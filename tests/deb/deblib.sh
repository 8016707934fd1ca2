# shellcheck shell=bash
# tests/deb/deblib.sh: helpers for tests/deb/t-*.sh, sourced after ../lib.sh.
#
# Real dpkg transactions (Debian 12's dpkg 1.21) in an alternate root:
# `dpkg --root=R` runs the maintainer scripts chrooted into R, so R holds
# busybox for /bin/sh and the small commands, GNU find (the trigger uses
# -cnewer), dpkg-deb (with GNU tar) and dpkg-query (the apt hook uses
# them) and their libraries; pbitmap, statically linked, needs none.  The
# pbitmap .deb comes from `make deb`.
#
#   make_deb_root DIR   an empty root with those and a dpkg database; sets R
#   dpkgr ARGS...       dpkg --root=$R --force-depends ARGS
#   build_deb NAME VERSION PAYLOAD   a .deb of the directory PAYLOAD (prints its path)

need dpkg dpkg-deb dpkg-query ldd chroot find
[[ -x /bin/busybox ]] || fail "/bin/busybox missing (Debian package busybox-static; make deps)"
PB_DEB=$(ls "$TOP"/build/deb/pbitmap_*.deb 2>/dev/null | head -n 1)
[[ -n $PB_DEB && -f $PB_DEB ]] || fail "no pbitmap .deb under build/deb (make deb)"

# copy_binary FILE: FILE and the libraries ldd lists for it, into $R.
copy_binary() {
	local lib
	mkdir -p "$R$(dirname "$1")"
	cp -L "$1" "$R$1" || fail "copy $1"
	for lib in $(ldd "$1" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }'); do
		mkdir -p "$R$(dirname "$lib")"
		[[ -e $R$lib ]] || cp -L "$lib" "$R$lib" || fail "copy $lib"
	done
}

make_deb_root() {
	R=$1
	mkdir -p "$R"/{bin,dev,tmp,etc,var/lib/dpkg/info,var/lib/dpkg/updates,usr/bin,usr/lib/x86_64-linux-gnu} ||
		fail "mkdir $R"
	ln -s usr/lib "$R/lib"
	ln -s usr/lib "$R/lib64" 2>/dev/null || mkdir -p "$R/lib64"
	cp /bin/busybox "$R/bin/" || fail "copy busybox"
	chroot "$R" /bin/busybox --install -s /bin || fail "busybox --install in $R"
	mknod -m 666 "$R/dev/null" c 1 3 || fail "mknod $R/dev/null"
	touch "$R/var/lib/dpkg/status" "$R/var/lib/dpkg/available"
	copy_binary /usr/bin/find
	copy_binary /usr/bin/dpkg-deb
	copy_binary /usr/bin/dpkg-query
	copy_binary /usr/bin/tar	# dpkg-deb runs GNU tar
}

dpkgr() {
	dpkg --root="$R" --force-depends --force-not-root "$@"
}

build_deb() {
	local name=$1 version=$2 payload=$3 out
	out=$(mktemp -d "$(tmpdir)/deb.XXXXXX")
	mkdir -p "$payload/DEBIAN"
	cat >"$payload/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $(dpkg --print-architecture)
Maintainer: pbitmap tests <pbitmap@example.org>
Description: a package built by pbitmap's tests/deb
CONTROL
	dpkg-deb --root-owner-group --build "$payload" "$out/${name}_${version}.deb" >/dev/null ||
		fail "dpkg-deb --build $name $version"
	rm -rf "$payload/DEBIAN"
	echo "$out/${name}_${version}.deb"
}
