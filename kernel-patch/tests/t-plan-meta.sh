#!/bin/bash
# Guest test: a start-up plan's metadata table (0024; learned, 0025).  A
# copy of busybox (static: no ld.so or libraries to read), owned by root,
# stamped with a plan of 24 files, each alone in a fresh directory, gets a metadata table
# of the blocks its plan's look-ups read: every directory's blocks on the
# way (FIEMAP, filefrag) and the inode-table blocks of those directories
# and of the files (debugfs imap), made here as craft-meta.py writes it.
#
#   - After a drop, with vm.pbitmap_plan_meta=1, an exec reads the table
#     (pbitmap_plan_meta_pages counts its pages not cached: a drop leaves
#     the blocks of inodes in use, the root's among them) and makes fewer
#     read requests than with 0, where each block is read alone by the
#     look-up that needs it; three execs each way, alternated.
#   - With -1 (the default) on a non-rotational disk (the device's gap
#     below 256 KiB) the table is not read: pbitmap_plan_meta_skip_gap.
#   - Never read for a copy owned by nobody, nor one of root's that its
#     group may write (pbitmap_plan_meta_skip_owner), nor with the table
#     made for another filesystem UUID (pbitmap_plan_meta_skip_stale): no
#     page counted, and the program runs.
#   - Learned (0025): a program of root's that reads the same 24 files whole
#     (so that its learned plan lists them, 0018), learned over two cold
#     runs with vm.pbitmap_learn=1: the first plan lists the 24 files, the
#     second generation has a table holding every block of tree/'s
#     look-ups (the drop leaves the directories above it cached: the
#     shell's working directory holds them); its cold runs then make fewer
#     read requests with the table read than without (two each way).
#   - Each malformed table craft-meta.py makes is refused when the record
#     is parsed: exactly one pbitmap_plan_reject_<reason> of the one it
#     names, no plan followed, and the program runs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=/var/tmp/t-plan-meta
CRAFT=(python3 "$HERE/craft-meta.py")
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=kernel-patch/tests/vmstatlib.sh
. "$HERE/vmstatlib.sh"
# shellcheck source=kernel-patch/tests/metalib.sh
. "$HERE/metalib.sh"
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" && cd "$W"
for t in filefrag debugfs busybox; do
	command -v $t >/dev/null || fail "$t is not installed"
done
meta_table_setup "$W"

# ---- the program, its plan and its table ----------------------------------------
cp "$(command -v busybox)" prog
pbitmap add -q --plan-size 16K prog || fail "cannot stamp prog with a plan area"
for d in $(seq -w 0 23); do
	mkdir -p "tree/d$d"
	head -c 4096 /dev/urandom >"tree/d$d/f"
done
pbitmap plan prog "$W"/tree/d*/f || fail "pbitmap plan"
sync
dirs=(/ /var /var/tmp "$W" "$W/tree" "$W"/tree/d*)
{ dir_blocks "${dirs[@]}"; inode_blocks "$SRC" "${dirs[@]}" "$W"/tree/d*/f; } | sort -n -u >units.txt
units=$(wc -l <units.txt)
[ "$units" -ge 30 ] || fail "only $units metadata blocks found on the plan's paths: wanted at least 30"
mapfile -t ranges < <(meta_ranges units.txt)
DEV=$(stat -c %Hd:%Ld prog)
UUID=$(findmnt -no UUID --target "$W")
[ -n "$UUID" ] || fail "no UUID for $W's filesystem"
table() {	# OUT [OPTION...]: a copy of prog with the table, and OPTIONs of craft-meta.py
	local out=$1
	shift
	cp -a prog "$out"
	"${CRAFT[@]}" "$out" --dev "$DEV" --uuid "$UUID" "${ranges[@]/#/--range=}" "$@" >/dev/null ||
		fail "craft-meta.py $out $*"
}
table meta
pbitmap show meta | grep -q "metadata" || fail "pbitmap show prints no metadata table for meta"
echo "table: $units blocks in ${#ranges[@]} ranges on $DEV ($UUID)"

# ---- read or not: one exec, after a drop ---------------------------------------
KEYS=(pbitmap_plan_exec pbitmap_plan_meta_pages pbitmap_plan_meta_skip_{owner,stale,gap}
      pbitmap_plan_reject_{header,meta})
declare -A S0 S1 D
REQS=0
# run_true PROG [AS]: PROG, a copy of busybox, runs true (as AS if given);
# busybox runs the applet its argv[0] names: "busybox true"
run_true() {
	if [ -n "${2:-}" ]; then
		setpriv --reuid="$(id -u "$2")" --regid="$(id -g "$2")" --clear-groups \
			bash -c 'exec -a busybox "$0" true' "$W/$1" || fail "$1 run as $2 failed"
	else
		(exec -a busybox "$W/$1" true) || fail "$1 failed"
	fi
}
# cold_exec PROG [AS]: D, the counters' change over a cold run_true;
# REQS, the disk's read requests meanwhile (metalib.sh)
cold_exec() { meta_cold_exec run_true "$@"; }
for k in "${KEYS[@]}"; do
	[ -n "$(grep "^$k " /proc/vmstat)" ] || fail "no counter $k in /proc/vmstat"
done

meta_rounds meta
# A clean-clone run (2026-12-06) once saw 19 requests an exec without the
# table where others see 44-47: the look-ups found their blocks cached or
# read by someone else.  What else ran, and the pbitmap settings, are
# printed to tell which.
[ "$WITH" -lt "$WITHOUT" ] ||
	fail "three cold execs made $WITH read requests with the table read, $WITHOUT without: want fewer;" \
		"other processes: $(ps --ppid 2 -p 2 --deselect -o comm= | sort | uniq -c | tr -s ' \n' ' ');" \
		"$(cd /proc/sys/vm && grep -H . pbitmap_* 2>/dev/null | tr '\n' ' ')"
echo "the table read: $WITH read requests in three cold execs, $WITHOUT without"

# -1, the default, on a disk that says it is not rotational: no table read
echo -1 >/proc/sys/vm/pbitmap_plan_meta
echo 0 >"$ROT"
cold_exec meta
echo 1 >"$ROT"
[ "${D[pbitmap_plan_meta_skip_gap]} ${D[pbitmap_plan_meta_pages]}" = "1 0" ] ||
	fail "-1 on a non-rotational disk: skip_gap ${D[pbitmap_plan_meta_skip_gap]}, meta_pages ${D[pbitmap_plan_meta_pages]}; want 1 0"
cold_exec meta
[ "${D[pbitmap_plan_meta_skip_gap]}" = 0 ] && [ "${D[pbitmap_plan_meta_pages]}" -gt 0 ] ||
	fail "-1 on a rotational disk: skip_gap ${D[pbitmap_plan_meta_skip_gap]}, meta_pages ${D[pbitmap_plan_meta_pages]}"
echo "vm.pbitmap_plan_meta=-1 reads the table on a rotational disk only"

# ---- learned: a reader of the same 24 files ---------------------------------------
# A program of root's that reads each file named whole, in one read(2):
# its first learned run lists the files in its plan (0018), the second
# follows the plan and its exec's look-ups are learned into the table.
printf '#include <fcntl.h>\n#include <unistd.h>\nstatic char b[65536];\nint main(int c, char **v)\n{\n\tfor (int i = 1; i < c; i++) {\n\t\tint fd = open(v[i], O_RDONLY);\n\n\t\tif (fd < 0 || read(fd, b, sizeof(b)) != 4096)\n\t\t\treturn 1;\n\t\tclose(fd);\n\t}\n\treturn 0;\n}\n' >reader.c
gcc -O1 -o reader reader.c || fail "cannot build the reader"
pbitmap add -q --plan-size 16K reader || fail "cannot stamp the reader"
# the paths expanded once, here: a glob expanded after a drop would look
# the files up itself, and the exec's look-ups would find them cached
files=("$W"/tree/d*/f)
vm=/proc/sys/vm
learn_was="$(cat $vm/pbitmap_learn) $(cat $vm/pbitmap_learn_interval_s) $(cat $vm/pbitmap_learn_window_ms)"
trap 'read -r a b c <<<"$learn_was"; echo "$a" >$vm/pbitmap_learn; echo "$b" >$vm/pbitmap_learn_interval_s; echo "$c" >$vm/pbitmap_learn_window_ms; meta_table_restore' EXIT
echo 1 >$vm/pbitmap_learn
echo 0 >$vm/pbitmap_learn_interval_s
echo 10000 >$vm/pbitmap_learn_window_ms
learned_run() {	# a cold learned run of the reader, written back
	local w0 w1
	sleep 1.1	# past the repeat window of the run before
	vmstat_snap S0 pbitmap_learn_written
	sync
	echo 3 >/proc/sys/vm/drop_caches
	./reader "${files[@]}" || fail "the reader failed"
	echo 1 >$vm/pbitmap_learn_flush
	vmstat_snap S1 pbitmap_learn_written
	[ "${S1[pbitmap_learn_written]}" -gt "${S0[pbitmap_learn_written]}" ] ||
		fail "the reader's learned run wrote nothing back"
}
table_of() {	# PROGRAM: its plan's files, and its table's units, one a line ("unit N")
	pbitmap show --json "$1" | python3 -c '
import json, sys
p = json.load(sys.stdin)[0]
p = p.get("plan") or {}
for f in p.get("files", []):
    print("file", f["path"])
m = p.get("meta")
for start, nr, age in (m or {}).get("ranges", []):
    for u in range(start, start + nr):
        print("unit", u)
'
}
learned_run
table_of reader >first.txt
[ "$(grep -c "^file $W/tree/d.*/f$" first.txt)" = 24 ] ||
	fail "the first learned run's plan lists $(grep -c "^file $W/tree" first.txt) of the 24 files: $(head -5 first.txt)"
learned_run
table_of reader >second.txt
grep '^unit ' second.txt | cut -d' ' -f2 | sort -n -u >learned.txt
# what the look-ups of the files in tree/ read: tree/d*'s blocks, the
# inode-table blocks of tree/d* and their files (the drop left /,
# /var, /var/tmp and $W cached: the shell's directory holds them)
{ dir_blocks "$W"/tree/d*; inode_blocks "$SRC" "$W"/tree/d* "$W"/tree/d*/f; } | sort -n -u >needed.txt
missing=$(grep -Fxvf learned.txt needed.txt | wc -l || true)
[ "$(wc -l <learned.txt)" -gt 0 ] && [ "$missing" = 0 ] ||
	fail "the learned table has $(wc -l <learned.txt) units; $missing of the $(wc -l <needed.txt) blocks the look-ups read are not among them"
echo "learned: a table of $(wc -l <learned.txt) units, every one of the $(wc -l <needed.txt) blocks of tree/'s look-ups among them"
echo 0 >$vm/pbitmap_learn
learned_with=0 learned_without=0
for round in 1 2; do
	echo 1 >/proc/sys/vm/pbitmap_plan_meta
	sleep 1.1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	read -r r0 _ <"/sys/block/$DISK/stat"
	./reader "${files[@]}" || fail "the reader failed"
	read -r r1 _ <"/sys/block/$DISK/stat"
	learned_with=$((learned_with + r1 - r0))
	echo 0 >/proc/sys/vm/pbitmap_plan_meta
	sleep 1.1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	read -r r0 _ <"/sys/block/$DISK/stat"
	./reader "${files[@]}" || fail "the reader failed"
	read -r r1 _ <"/sys/block/$DISK/stat"
	learned_without=$((learned_without + r1 - r0))
done
[ "$learned_with" -lt "$learned_without" ] ||
	fail "two cold runs of the reader made $learned_with read requests with its learned table read, $learned_without without: want fewer"
echo "the learned table read: $learned_with read requests in two cold runs of the reader, $learned_without without"

# ---- whose table is read -----------------------------------------------------------
echo 1 >/proc/sys/vm/pbitmap_plan_meta
cp -a meta nobodys && chown nobody nobodys
cp -a meta groups && chmod 775 groups
table stale --uuid 00112233-4455-6677-8899-aabbccddeeff
for c in "nobodys skip_owner nobody" "groups skip_owner" "stale skip_stale" "meta - nobody"; do
	read -r prog why as <<<"$c"
	cold_exec "$prog" "${as:-}"
	[ "${D[pbitmap_plan_exec]}" = 1 ] || fail "$prog: the plan was not followed"
	if [ "$why" = - ]; then
		[ "${D[pbitmap_plan_meta_pages]}" -gt 0 ] ||
			fail "$prog run by ${as:-root}: no page of the table read"
	else
		[ "${D[pbitmap_plan_meta_$why]} ${D[pbitmap_plan_meta_pages]}" = "1 0" ] ||
			fail "$prog: $why ${D[pbitmap_plan_meta_$why]}, meta_pages ${D[pbitmap_plan_meta_pages]}; want 1 0"
	fi
	echo "ok: $prog run by ${as:-root}: ${why/#-/read}"
done

# ---- malformed tables --------------------------------------------------------------
mapfile -t cases < <("${CRAFT[@]}" --list-bad)
[ "${#cases[@]}" -ge 8 ] || fail "craft-meta.py --list-bad gave ${#cases[@]} cases"
for c in "${cases[@]}"; do
	read -r name want <<<"$c"
	table "bad-$name" --bad "$name"
	cold_exec "bad-$name"
	for k in pbitmap_plan_reject_header pbitmap_plan_reject_meta pbitmap_plan_exec pbitmap_plan_meta_pages; do
		expect=0
		[ "$k" = "pbitmap_plan_$want" ] && expect=1
		[ "${D[$k]}" = "$expect" ] || fail "bad table $name: $k moved by ${D[$k]}, want $expect"
	done
	echo "ok: bad table $name: $want"
done
echo "PASS: a plan's metadata table read before its look-ups on $(uname -r)"
