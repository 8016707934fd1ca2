#!/bin/bash
# t-metadata: add, re-stamp and strip keep every piece of file metadata.
#
# Asserted for ELF programs, and for a data file (record in an xattr):
# owner and group (a nobody uid), mode including setuid 4755 and 0700, mtime
# to the nanosecond, file capabilities (setcap cap_net_raw+ep, which chown
# and any write drop, so the tool must put it back), a POSIX ACL and a user
# xattr.  After strip the ELF content is byte-identical too.
# Inodes (pbitmap(1), REPLACING FILES): an ELF file gets a new inode at
# each change (a copy is renamed over it); a data file keeps its inode and
# its hard links.  An ELF file with another hard link is skipped (exit 3,
# unchanged) unless --break-links, which gives only the named path the new
# copy while the other name keeps the original file, byte for byte.
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
	stat -c 'uid=%u gid=%g mode=%a mtime=%.9Y type=%F' -- "$f"
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
	if [[ $f == */data* ]]; then
		[[ $(stat -c %i "$f") == "$ino" ]] || fail "$f: a data file got a new inode by $when"
		if [[ -e $f.link ]]; then
			[[ $(stat -c %i "$f.link") == "$ino" ]] || fail "$f: hard link now points elsewhere after $when"
		fi
	elif [[ -e $f.link ]]; then
		[[ $(stat -c %i "$f.link") == "$ino" ]] || fail "$f: the other name lost the old file after $when"
		assert_cmp "$f.link" "$f.orig"
	fi
}

for kind in suid 0700 cap acl link all data-suid data-acl data-link; do
	f=$d/$kind
	setup_file "$kind" "$kind"
	before=$(meta "$f")
	ino=$(stat -c %i "$f")
	cp "$f" "$d/$kind.orig"
	opt=()
	if [[ $kind == link || $kind == all ]]; then
		# Refused as it is, then done with --break-links.
		snapshot "$f"
		expect_status 3 "$PBITMAP" add "$f"
		grep -q "hard links" "$ERR" || fail "$kind: unexpected message: $(cat "$ERR")"
		assert_unchanged "$f" "add on a file with another hard link"
		opt=(--break-links)
	fi

	expect_status 0 "$PBITMAP" add "${opt[@]}" "$f"
	check_same "$f" add "$before"
	if [[ $kind != data* ]]; then
		$ELFCHECK stamp "$d/$kind.orig" "$f" >/dev/null || fail "$kind: not stamped"
		out=$("$f") || fail "$kind: stamped program does not run"
		[[ $out == "metadata test program" ]] || fail "$kind: stamped program prints '$out'"
		[[ $(stat -c %h "$f") == 1 ]] || fail "$kind: the new copy has $(stat -c %h "$f") links"
	else
		getfattr --absolute-names -n user.pbitmap "$f" >/dev/null 2>&1 || fail "$kind: no user.pbitmap xattr"
		assert_cmp "$f" "$d/$kind.orig"
	fi

	expect_status 0 "$PBITMAP" add --generations 8 "$f"
	check_same "$f" "re-stamp with --generations 8" "$before"
	expect_status 0 "$PBITMAP" set --pages 0 "$f"
	check_same "$f" "set" "$before"

	expect_status 0 "$PBITMAP" strip "$f"
	check_same "$f" strip "$before"
	assert_cmp "$f" "$d/$kind.orig"
	if [[ $kind == data* ]]; then
		getfattr --absolute-names -n user.pbitmap "$f" >/dev/null 2>&1 && fail "$kind: user.pbitmap left after strip"
	fi
	pass "$kind: $(stat -c 'mode=%a uid=%u nlink=%h' "$f"), metadata kept through add, re-stamp, set, strip"
done

# A directory's default ACL must not give the new copy an ACL the file lacked.
mkdir "$d/dacl"
cp "$d/prog" "$d/dacl/prog"
setfacl -d -m u:65534:rwx "$d/dacl" || fail "setfacl -d"
before=$(meta "$d/dacl/prog")
[[ $before != *user:65534* ]] || fail "the test file already has an ACL entry"
expect_status 0 "$PBITMAP" add "$d/dacl/prog"
now=$(meta "$d/dacl/prog")
[[ $now == "$before" ]] || fail "a directory's default ACL changed the stamped file's metadata:
--- before
$before
--- after
$now"
pass "a directory's default ACL does not reach the replaced file"
