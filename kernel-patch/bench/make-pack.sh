#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kernel-patch/bench/make-pack.sh OUT_DIR SRC_TREE: the benchmark's data
# file, a real git pack (OUT_DIR/linux.pack and linux.idx) of SRC_TREE (the
# test bed's Linux source, kernel-patch/BASE): one commit with a fixed identity and date,
# every object in one pack with git's default delta search, one thread (so
# that the same tree gives the same pack).  Quilt's .pc/ is left out.
# Written under temporary names and renamed: never half-written.
set -euo pipefail
die() { echo "make-pack: $*" >&2; exit 1; }
[ $# = 2 ] || die "usage: make-pack.sh OUT_DIR SRC_TREE"
out=$1 src=$(cd "$2" 2>/dev/null && pwd) || die "$2: not a directory"
command -v git >/dev/null || die "git is not installed (make deps)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d "$out/.make-pack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GIT_DIR=$tmp/git GIT_WORK_TREE=$src
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@pbitmap GIT_AUTHOR_DATE='2026-01-01T00:00:00Z'
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@pbitmap GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
cd "$src"
git init -q
# -f: the Debian source's .gitignore ignores everything (/*) but what it lists.
git add -f -A -- . ':(exclude).pc'
git -c gc.auto=0 -c maintenance.auto=false commit -q -m "Linux source of the test bed"
git rev-list --objects --all | git pack-objects -q --threads=1 --delta-base-offset "$tmp/pack" >/dev/null
set -- "$tmp"/pack-*.pack
[ $# = 1 ] && [ -f "$1" ] || die "git pack-objects left $# packs"
mv "${1%.pack}.idx" "$tmp/linux.idx" && mv "$1" "$tmp/linux.pack"
mv "$tmp/linux.idx" "$out/linux.idx" && mv "$tmp/linux.pack" "$out/linux.pack"
echo "make-pack: $(git rev-list --objects --all | wc -l) objects," \
	"$(($(stat -c %s "$out/linux.pack") >> 20)) MiB pack, $(($(stat -c %s "$out/linux.idx") >> 10)) KiB index"
