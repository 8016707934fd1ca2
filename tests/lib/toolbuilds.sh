# shellcheck shell=bash
# tests/lib/toolbuilds.sh: two builds of a real program with real code
# changes between them, as a distribution would ship them: this project's
# own tool at commit 49a6f83 and in the working tree (portable profiles
# added since: profile.c, anchors.c, cmd-profile.c; merge rewritten), each
# built as a program (main.c) and a shared library of its other modules,
# stripped as Debian's dh_strip does.  Sourced after ../lib.sh by
# tests/tool/t-profile.sh and tests/rpm/t-carry.sh.
#
#   build_tool REV DIR   DIR/prog and DIR/libpbitmap.so (RUNPATH $ORIGIN)
#                        of commit REV, or of the working tree for "worktree";
#                        with BUILD_STATIC=1 also DIR/prog-static, the whole
#                        tool linked statically

need gcc strip git tar
[[ -d $TOP/.git ]] || fail "$TOP is not a git clone: the two builds need commit 49a6f83"
TOOLBUILD_OLD=49a6f83

build_tool() {
	local rev=$1 out=$2 src=$2/src
	mkdir -p "$out"
	if [[ $rev == worktree ]]; then
		cp -r "$TOP/pbitmap-tool" "$src"
	else
		git -C "$TOP" archive "$rev" pbitmap-tool | tar -x -C "$out" ||
			fail "git archive $rev"
		mv "$out/pbitmap-tool" "$src"
	fi
	local cflags=(-std=c11 -O2 -g -fPIC -D_GNU_SOURCE -I"$src/uapi" -I"$src/src"
		      -DPBITMAP_VERSION_STRING='"t"')
	local mods=()
	for f in "$src"/src/*.c; do [[ $f == */main.c ]] || mods+=("$f"); done
	gcc "${cflags[@]}" -shared -Wl,-soname,libpbitmap.so -o "$out/libpbitmap.so" \
		"${mods[@]}" -lelf -lzstd -lz -lcrypto 2>"$out/cc.log" ||
		fail "build $rev library: $(tail -5 "$out/cc.log")"
	gcc "${cflags[@]}" -o "$out/prog" "$src/src/main.c" -L"$out" -lpbitmap \
		-Wl,-rpath,'$ORIGIN' 2>>"$out/cc.log" || fail "build $rev program: $(tail -5 "$out/cc.log")"
	# The whole tool in one static program, libraries and all (libelf,
	# libzstd, libz, libcrypto, libc): 4 MB or more whose start-up touches
	# pages all over it, and whose every function moves when the tool's own
	# code changes size.  Only with BUILD_STATIC=1 (t-upgrade).
	if [[ ${BUILD_STATIC:-} == 1 ]]; then
		gcc "${cflags[@]}" -static -o "$out/prog-static" "$src"/src/*.c \
			-lelf -lzstd -lz -lcrypto 2>>"$out/cc.log" ||
			fail "build $rev static program: $(tail -5 "$out/cc.log")"
	fi
	# As Debian's dh_strip does.
	strip --remove-section=.comment --remove-section=.note --strip-unneeded \
		"$out/prog" "$out/libpbitmap.so" ${BUILD_STATIC:+"$out/prog-static"} || fail "strip $rev"
	rm -rf "$src"
}
