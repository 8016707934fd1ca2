#!/bin/bash
# t-metadata: add, re-stamp and strip keep every piece of file metadata.
#
# Asserted for ELF programs, and for a data file (record in an xattr):
# inode number, hard link count (and the other link sees the same inode),
# owner and group (a nobody uid), mode including setuid 4755 and 0700, mtime
# to the nanosecond, file capabilities (setcap cap_net_raw+ep, which the
# kernel drops on any write, so the tool must put it back), a POSIX ACL and a
# user xattr.  After strip the ELF content is byte-identical too.
# Why: rpm-installed files carry all of these, and `rpm -V` (or a setuid
# program losing its capability) would show any change.

source "$(dirname "$0")/../lib.sh"
need gcc chown chmod touch stat setcap getcap setfacl getfacl setfattr getfattr python3
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
cat >"$d/hello.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("metadata test program"); return 0; }
EOF
gcc -O1 -o "$d/prog" "$d/hello.c" || fail "gcc"

# Everything we care about, except size and ctime (which must change).
meta() {
	local f=$1
	stat -c 'ino=%i nlink=%h uid=%u gid=%g mode=%a mtime=%.9Y type=%F' -- "$f"
	echo "cap: $(getcap -- "$f" | sed "s|^$f||")"
	getfacl --absolute-names -n -p -- "$f" 2>/dev/null | grep -v '^# file:'
	getfattr --absolute-names -d -m - -e hex -- "$f" 2>/dev/null |
		grep -v -e '^# file:' -e '^user\.pbitmap='
}

# setup_file NAME KIND: a fresh copy with a given kind of metadata.
setup_file() {
	local f=$d/$1 kind=$2
	if [[ $kind == data* ]]; then
		head -c 300000 /dev/urandom >"$f"
	else
		cp "$d/prog" "$f"
	fi
	case $kind in
	*suid) chown 65534:65534 "$f" && chmod 4755 "$f" ;;
	*0700) chmod 0700 "$f" ;;
	*cap) setcap cap_net_raw+ep "$f" ;;
	*acl) setfacl -m u:65534:rx,g:65534:r "$f" && setfattr -n user.test -v keepme "$f" ;;
	*link) ln "$f" "$f.link" ;;
	*all)
		chown 65534:65534 "$f" && chmod 4755 "$f" && setcap cap_net_raw+ep "$f" &&
			setfacl -m u:65534:rx "$f" && setfattr -n user.test -v keepme "$f" &&
			ln "$f" "$f.link"
		;;
	esac || fail "setting up $kind on $f"
	touch -d '2001-01-01 12:34:56.123456789' "$f" || fail "touch"
}

check_same() {
	local f=$1 when=$2 before=$3 now
	now=$(meta "$f")
	[[ $now == "$before" ]] || fail "$f: metadata changed by $when:
--- before
$before
--- after
$now"
	if [[ -e $f.link ]]; then
		[[ $(stat -c %i "$f.link") == $(stat -c %i "$f") ]] || fail "$f: hard link now points elsewhere after $when"
	fi
}

for kind in suid 0700 cap acl link all data-suid data-acl data-link; do
	f=$d/$kind
	setup_file "$kind" "$kind"
	before=$(meta "$f")
	cp "$f" "$d/$kind.orig"

	expect_status 0 "$PBITMAP" add "$f"
	check_same "$f" add "$before"
	if [[ $kind != data* ]]; then
		$ELFCHECK stamp "$d/$kind.orig" "$f" >/dev/null || fail "$kind: not stamped"
		out=$("$f") || fail "$kind: stamped program does not run"
		[[ $out == "metadata test program" ]] || fail "$kind: stamped program prints '$out'"
	else
		getfattr --absolute-names -n user.pbitmap "$f" >/dev/null 2>&1 || fail "$kind: no user.pbitmap xattr"
		assert_cmp "$f" "$d/$kind.orig"
	fi

	expect_status 0 "$PBITMAP" add --generations 8 "$f"
	check_same "$f" "re-stamp with --generations 8" "$before"

	expect_status 0 "$PBITMAP" strip "$f"
	check_same "$f" strip "$before"
	assert_cmp "$f" "$d/$kind.orig"
	if [[ $kind == data* ]]; then
		getfattr --absolute-names -n user.pbitmap "$f" >/dev/null 2>&1 && fail "$kind: user.pbitmap left after strip"
	fi
	pass "$kind: $(stat -c 'mode=%a uid=%u nlink=%h' "$f"), metadata kept through add, re-stamp, strip"
done
