# shellcheck shell=bash
# tests/lib/toolbuilds.sh: two builds of a real program with real code
# changes between them, as a distribution would ship them: this project's
# own tool at commit 49a6f83 and in the working tree (portable profiles
# added since: profile.c, anchors.c, cmd-profile.c; merge rewritten), each
# built as a program (main.c) and a shared library of its other modules,
# stripped as Debian's dh_strip does.  Sourced after ../lib.sh by
# tests/tool/t-profile.sh, tests/rpm/t-carry.sh, tests/deb/t-deb.sh and
# tests/lib/make-toolbuilds (for the guest test t-upgrade).
#
#   build_tool REV DIR   DIR/prog and DIR/libpbitmap.so (RUNPATH $ORIGIN)
#                        of commit REV, or of the working tree for "worktree";
#                        with BUILD_STATIC=1 also DIR/prog-static, the whole
#                        tool linked statically
#   learn_build DIR      stamp DIR's two files and learn them with pbitmap record
#   gen_pages FILE [AGE] the pages marked in a generation, on one line
#   check_carried WHAT CARRIED USED [AGE]
#                        coverage and Jaccard of carried pages; fail below 0.9

need gcc strip git tar
# A clone, or a worktree of one (.git a file there).
[[ -e $TOP/.git ]] || fail "$TOP is not a git clone: the two builds need commit 49a6f83"
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
	local mods=() libs=(-lelf -lzstd -lz -lcrypto)
	for f in "$src"/src/*.c; do [[ $f == */main.c ]] || mods+=("$f"); done
	# Digests: OpenSSL's libcrypto at 49a6f83, libmd since.
	grep -q '<md5.h>' "$src/src/digest.c" && libs=(-lelf -lzstd -lz -lmd)
	gcc "${cflags[@]}" -shared -Wl,-soname,libpbitmap.so -o "$out/libpbitmap.so" \
		"${mods[@]}" "${libs[@]}" 2>"$out/cc.log" ||
		fail "build $rev library: $(tail -5 "$out/cc.log")"
	gcc "${cflags[@]}" -o "$out/prog" "$src/src/main.c" -L"$out" -lpbitmap \
		-Wl,-rpath,'$ORIGIN' 2>>"$out/cc.log" || fail "build $rev program: $(tail -5 "$out/cc.log")"
	# The whole tool in one static program, libraries and all (libelf,
	# libzstd, libz, libcrypto or libmd, libc): megabytes whose start-up touches
	# pages all over it, and whose every function moves when the tool's own
	# code changes size.  Only with BUILD_STATIC=1 (t-upgrade).
	if [[ ${BUILD_STATIC:-} == 1 ]]; then
		gcc "${cflags[@]}" -static -o "$out/prog-static" "$src"/src/*.c \
			"${libs[@]}" 2>>"$out/cc.log" ||
			fail "build $rev static program: $(tail -5 "$out/cc.log")"
	fi
	# As Debian's dh_strip does.
	strip --remove-section=.comment --remove-section=.note --strip-unneeded \
		"$out/prog" "$out/libpbitmap.so" ${BUILD_STATIC:+"$out/prog-static"} || fail "strip $rev"
	rm -rf "$src"
}

# learn_build DIR: stamp DIR/prog and DIR/libpbitmap.so and learn, with
# `pbitmap record`, the pages `DIR/prog digest` and `DIR/prog add` of a copy
# of python3.11 use: the same work for either build, whatever record
# format each writes.
learn_build() {
	"$PBITMAP" add -q "$1/prog" "$1/libpbitmap.so" || fail "stamp $1"
	cp /usr/bin/python3.11 "$1.work" || fail "copy python3.11"
	for cmd in digest add; do
		"$PBITMAP" record -q -- "$1/prog" "$cmd" "$1.work" >/dev/null 2>"$1.rec" ||
			fail "record $1/prog $cmd: $(tail -3 "$1.rec")"
	done
}

# gen_pages FILE [AGE]: the pages marked in generation AGE (default 0), on one line.
gen_pages() {
	"$PBITMAP" show --json "$1" | python3 -c '
import json, sys
p = json.load(sys.stdin)[0]["planes"][int(sys.argv[1])]
print(" ".join(str(n) for a, b in p["ranges"] for n in range(a, b + 1)))' "${2:-0}" ||
		fail "cannot read the bitmap of $1"
}

# check_carried WHAT CARRIED USED [AGE]: note how many pages of generation
# AGE were carried into CARRIED and used by USED (a copy of the same build
# that learned them), the coverage (share of used pages carried) and the
# Jaccard index; fail when the coverage is below 0.9.
check_carried() {
	local cov jac c u
	read -r cov jac c u < <(python3 - "$(gen_pages "$2" "${4:-0}")" "$(gen_pages "$3" "${4:-0}")" <<'PY'
import sys
c = set(sys.argv[1].split()); u = set(sys.argv[2].split())
print(len(c & u) / len(u) if u else 1.0, len(c & u) / len(c | u) if c | u else 1.0,
      len(c), len(u))
PY
)
	note "$1: $c pages carried, $u used; coverage $cov, Jaccard $jac"
	python3 -c "import sys; sys.exit(0 if float('$cov') >= 0.9 else 1)" ||
		fail "$1: only $cov of the pages used were carried"
}
