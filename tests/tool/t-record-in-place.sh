#!/bin/bash
# t-record-in-place: a learned generation (`pbitmap record`, and pbitmapd's
# learning, which shares pb_learn_generation()) goes where the kernel
# writes one: into the record slot of the ELF file's .pbitmap section that
# is not current, in place (docs/FORMAT.md, "In an ELF executable or shared
# library"; issue 45).  The file keeps its inode, so a start-up plan naming
# it still reads it.
#
# Asserted, the slots checked independently (Python struct and zlib.crc32):
#   - record on a stamped copy of libc keeps its inode, its mtime (to the
#     nanosecond) and its marker, adds a generation each time (show --json
#     "runs"), and alternates the slots (1, 0, 1); the slot it leaves is the
#     previous generation, still valid; verify accepts it;
#   - a program with a plan (pbitmap add gives it a 32 KiB plan area) that
#     lists that libc: after records on it, verify lists no file replaced;
#     a tool change of the library (set: a renamed copy) shows the contrast:
#     verify then says 1 replaced;
#   - the fallbacks, each said with -v, each still a success, the record
#     verifying and one generation more: the program itself (a write-open
#     would make a concurrent exec fail), the dynamic loader (a copy of
#     ld.so: every dynamic exec opens it for exec), a library being
#     executed (one with an entry point of its own, running: ETXTBSY), and
#     once it ends, in place; a library with file capabilities (a write
#     removes them; the renamed copy keeps them), one whose user.pbitmap
#     marker is missing (the renamed copy gets it again);
#   - the other slot torn (garbage written with dd at its offset, from show
#     --json's record_offset, section_size and record_size): verify accepts,
#     show reads the current generation; the next record writes the torn
#     slot, which is then valid and current;
#   - kill -9 (PBITMAP_FAULT, the ASan build) at each step of the in-place
#     write: verify accepts; before the write, the old generation; half
#     written, the old generation and the other slot failing its checksum;
#     written, the new one; the inode kept; the next record adds one;
#   - 4 writers recording in a loop for 5 s, verify in a loop beside them:
#     as many generations as records (the writers' lock: none lost), no
#     verify fails;
#   - a mapped data file (record in its user.pbitmap attribute) keeps its
#     inode too, as it always did.

source "$(dirname "$0")/../lib.sh"
need gcc python3 dd setcap getcap getfattr setfattr ldd stat
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
cd "$d" && d=$(pwd -P) || fail "cd $d"
mkdir lib || fail mkdir
LIBC=$(ldd /bin/true | awk '/libc\.so/ { print $3 }')
LDSO=$(readlink -f "$(ldd /bin/true | awk '/ld-linux|ld\.so/ { print $1; exit }')")
[[ -f $LIBC && -f $LDSO ]] || fail "no libc ($LIBC) or ld.so ($LDSO)"
cp "$LIBC" lib/libc.so.6 || fail "cp libc"
cat >m.c <<'EOF'
#include <stdio.h>
int main(void) { puts("in-place test program"); return 0; }
EOF
# The copy of libc by its rpath: the program maps it, and record learns it.
gcc -O1 -Wl,-rpath,"$d/lib" -o m m.c || fail gcc
[[ $(ldd ./m | awk '/libc\.so/ { print $3 }') == "$d/lib/libc.so.6" ]] || fail "m does not map lib/libc.so.6"
"$PBITMAP" add -q lib/libc.so.6 m || fail "cannot stamp"

rec() { timeout -k 5 120 "$PBITMAP" record "$@"; }
# libcopy DIR: a stamped copy of libc in DIR and ./m-DIR, an unstamped program mapping it.
libcopy() {
	mkdir "$1" && cp "$LIBC" "$1/libc.so.6" && "$PBITMAP" add -q "$1/libc.so.6" &&
		gcc -O1 -Wl,-rpath,"$d/$1" -o "m-$1" m.c
}
json() { "$PBITMAP" show --json "$1" | python3 -c 'import json,sys; r = json.load(sys.stdin)[0]; print(r[sys.argv[1]])' "$2"; }
ino() { stat -c %i "$1"; }
# slots FILE: "RUNS0 RUNS1" of the two slots, -1 for a slot failing its checksum.
slots() {
	read -r size s0 s1 < <($ELFCHECK slots "$1") || fail "no slots in $1"
	python3 - "$1" "$size" "$s0" "$s1" <<'EOF'
import struct, sys, zlib
path, size, offs = sys.argv[1], int(sys.argv[2]), map(int, sys.argv[3:5])
data = open(path, "rb").read()
out = []
for o in offs:
    rec = data[o:o + size]
    ok = zlib.crc32(rec[:8] + b"\0\0\0\0" + rec[12:]) == struct.unpack_from("<I", rec, 8)[0]
    out.append(str(struct.unpack_from("<Q", rec, 40)[0]) if ok else "-1")
print(" ".join(out))
EOF
}

# ---- in place: the same inode, one generation more, the slots alternate ---------

L=lib/libc.so.6
touch -d '2001-01-01 12:34:56.123456789' "$L"
ino0=$(ino "$L") mtime0=$(stat -c %.9Y "$L")
[[ $(json "$L" slot) == 0 && $(json "$L" runs) == 0 && $(slots "$L") == "0 0" ]] ||
	fail "a fresh stamp: slot $(json "$L" slot), runs $(json "$L" runs), slots $(slots "$L")"
want_slot=1
for n in 1 2 3; do
	expect_status 0 rec -v -- ./m
	grep -q "$d/$L: written in place, into slot $want_slot (the same inode)" "$ERR" ||
		fail "record $n: not said to be in place, slot $want_slot: $(cat "$ERR")"
	grep -q "$d/m: not written in place (an executable" "$ERR" ||
		fail "record $n: the program itself is not said to be written by a copy: $(cat "$ERR")"
	[[ $(ino "$L") == "$ino0" ]] || fail "record $n: libc got a new inode"
	[[ $(json "$L" runs) == "$n" && $(json "$L" slot) == "$want_slot" ]] ||
		fail "record $n: runs $(json "$L" runs), slot $(json "$L" slot), wanted $n, $want_slot"
	s=$(slots "$L")
	[[ $want_slot == 1 && $s == "$((n - 1)) $n" || $want_slot == 0 && $s == "$n $((n - 1))" ]] ||
		fail "record $n: slots $s: the other slot is not the previous generation"
	want_slot=$((1 - want_slot))
done
[[ $(stat -c %.9Y "$L") == "$mtime0" ]] || fail "the mtime moved: $(stat -c %.9Y "$L"), was $mtime0"
$ELFCHECK marker "$L" >/dev/null || fail "the marker no longer describes the file: $($ELFCHECK marker "$L" 2>&1)"
expect_status 0 "$PBITMAP" verify "$L"
[[ $(json m runs) == 3 ]] || fail "the program has $(json m runs) generations, not 3"
pass "record: libc written in place 3 times, the same inode and mtime, slots 1 0 1, the other slot the previous generation; the program by a renamed copy"

# ---- a plan naming the library stays valid ---------------------------------------

expect_status 0 "$PBITMAP" plan m "$L"
expect_status 0 "$PBITMAP" verify m
grep -q "a plan of 1 files$" "$OUT" || fail "verify of the planned program: $(cat "$OUT")"
expect_status 0 rec -- ./m
expect_status 0 rec -- ./m
[[ $(json "$L" runs) == 5 && $(ino "$L") == "$ino0" ]] || fail "records after the plan: runs $(json "$L" runs)"
expect_status 0 "$PBITMAP" verify m
grep -q "m: OK: .*, a plan of 1 files$" "$OUT" || fail "after records on libc, verify of the program: $(cat "$OUT")"
grep -q replaced "$OUT" && fail "a learned libc is a replaced file in the plan: $(cat "$OUT")"
# The contrast: a tool change (a renamed copy) makes the entry stale.
expect_status 0 "$PBITMAP" set -q --pages 0 "$L"
[[ $(ino "$L") != "$ino0" ]] || fail "set kept the inode (the contrast relies on a new copy)"
expect_status 0 "$PBITMAP" verify m
grep -q "(1 replaced since" "$OUT" || fail "after set on libc, verify does not say replaced: $(cat "$OUT")"
pass "a plan naming libc: still current after 2 records (verify lists none replaced); after set (a renamed copy) 1 replaced"

# ---- the fallbacks -------------------------------------------------------------------

# fallback FILE REASON CMD...: record CMD; FILE written by a copy (a new inode), said why.
fallback() {
	local f=$1 why=$2 i r
	shift 2
	i=$(ino "$f") r=$(json "$f" runs)
	expect_status 0 rec -v -- "$@"
	grep -qF "$d/$f: not written in place ($why" "$ERR" || fail "$f: not said: $why: $(cat "$ERR")"
	[[ $(ino "$f") != "$i" ]] || fail "$f: kept its inode though written by a copy"
	[[ $(json "$f" runs) == $((r + 1)) ]] || fail "$f: $(json "$f" runs) generations, not $((r + 1))"
	expect_status 0 "$PBITMAP" verify "$f"
}

# The dynamic loader, running or not: every dynamic program's exec opens
# it for exec, and would fail for as long as a write-open of it is held.
cp "$LDSO" ld.so || fail "cp ld.so"
"$PBITMAP" add -q ld.so || fail "cannot stamp ld.so"
fallback ld.so "the dynamic loader or a static PIE" ./ld.so ./m
fallback ld.so "the dynamic loader or a static PIE" ./ld.so ./m
pass "the dynamic loader (a copy of ld.so), not running: written by a renamed copy every time, verifies"

# A library being executed: one with an entry point of its own (as
# Debian's libc.so.6 has), running; a program linked to it is recorded.
cat >runlib.c <<EOC
#include <unistd.h>
const char interp[] __attribute__((section(".interp"))) = "$LDSO";
int runlib_value(void) { return 0; }
void runlib_main(void) { for (;;) pause(); }
EOC
printf 'int runlib_value(void);\nint main(void) { return runlib_value(); }\n' >uses-runlib.c
gcc -shared -fPIC -o runlib.so runlib.c -Wl,-e,runlib_main &&
	gcc -o uses-runlib uses-runlib.c ./runlib.so -Wl,-rpath,"$d" || fail "cannot build runlib.so"
"$PBITMAP" add -q runlib.so || fail "cannot stamp runlib.so"
./runlib.so &
busy=$!
at_exit "kill $busy 2>/dev/null"
for _ in $(seq 50); do [[ $(readlink "/proc/$busy/exe") == "$d/runlib.so" ]] && break; sleep 0.1; done
[[ $(readlink "/proc/$busy/exe") == "$d/runlib.so" ]] || fail "runlib.so does not run"
fallback runlib.so "it is being executed (ETXTBSY" ./uses-runlib
kill -0 "$busy" || fail "the running runlib.so died"
kill "$busy"; wait "$busy" 2>/dev/null
i=$(ino runlib.so)
expect_status 0 rec -v -- ./uses-runlib
grep -q "runlib.so: written in place" "$ERR" && [[ $(ino runlib.so) == "$i" ]] ||
	fail "runlib.so no longer executed: not written in place: $(cat "$ERR")"
pass "a library being executed (its own entry point): ETXTBSY, written by a renamed copy, verifies; once it ends, in place"

# A library that needs no other (as Debian's libicudata does) is no loader:
# no entry point, so in place.
printf 'int nolibs_value(void) { return 0; }\n' >nolibs.c
printf 'int nolibs_value(void);\nint main(void) { return nolibs_value(); }\n' >uses-nolibs.c
gcc -shared -fPIC -nostdlib -o nolibs.so nolibs.c &&
	gcc -o uses-nolibs uses-nolibs.c ./nolibs.so -Wl,-rpath,"$d" || fail "cannot build nolibs.so"
"$PBITMAP" add -q nolibs.so || fail "cannot stamp nolibs.so"
i=$(ino nolibs.so)
expect_status 0 rec -v -- ./uses-nolibs
grep -q "nolibs.so: written in place" "$ERR" && [[ $(ino nolibs.so) == "$i" ]] ||
	fail "a library without DT_NEEDED (no entry point) not written in place: $(cat "$ERR")"
pass "a library that needs no other library, without an entry point: written in place"

# A library with file capabilities: a write(2) would remove them.
libcopy cap && setcap cap_net_raw+ep cap/libc.so.6 || fail "cannot set up a library with capabilities"
c=$(getcap cap/libc.so.6 | sed 's|^[^ ]* ||')
fallback cap/libc.so.6 "it has file capabilities" ./m-cap
[[ $(getcap cap/libc.so.6 | sed 's|^[^ ]* ||') == "$c" ]] || fail "the capability was lost"
# A library whose marker is missing (copied without attributes).
libcopy nm && setfattr -x user.pbitmap nm/libc.so.6 || fail "cannot set up a library without its marker"
fallback nm/libc.so.6 "its user.pbitmap marker is missing" ./m-nm
$ELFCHECK marker nm/libc.so.6 >/dev/null || fail "the renamed copy has no marker"
pass "file capabilities, a missing marker: written by a renamed copy (the capability kept, the marker made), verify accepts"

# ---- a torn other slot ------------------------------------------------------------------

libcopy t || fail "cannot stamp t/libc.so.6"
T=t/libc.so.6
rec -q -- ./m-t >/dev/null || fail "record on $T"
[[ $(json "$T" slot) == 1 && $(slots "$T") == "0 1" ]] || fail "libt: slot $(json "$T" slot), slots $(slots "$T")"
# Slot 0 is not current: garbage over it, at record_offset (slot 0 comes first).
off=$(json "$T" record_offset) rsize=$(json "$T" record_size) ssize=$(json "$T" section_size)
[[ $(json "$T" slot_offset) == $((off + ssize - rsize)) ]] || fail "slot 1 is not where show --json says"
head -c "$rsize" /dev/urandom | dd of="$T" bs=1 seek="$off" conv=notrunc status=none || fail dd
[[ $(slots "$T") == "-1 1" ]] || fail "the tear did not take: slots $(slots "$T")"
expect_status 0 "$PBITMAP" verify "$T"
[[ -s $ERR ]] && fail "verify of a torn other slot printed: $(cat "$ERR")"
[[ $(json "$T" runs) == 1 && $(json "$T" slot) == 1 ]] || fail "torn slot 0: show reads runs $(json "$T" runs)"
i=$(ino "$T")
expect_status 0 rec -v -- ./m-t
grep -q "$d/$T: written in place, into slot 0" "$ERR" || fail "the torn slot was not written: $(cat "$ERR")"
[[ $(slots "$T") == "2 1" && $(json "$T" slot) == 0 && $(ino "$T") == "$i" ]] ||
	fail "after the torn slot was written: slots $(slots "$T"), show slot $(json "$T" slot)"
expect_status 0 "$PBITMAP" verify "$T"
pass "the other slot torn (dd at record_offset): verify accepts, show reads slot 1; the next record repairs slot 0 (runs 2, current)"

# ---- kill -9 at each step ----------------------------------------------------------------

# One generation, and two workloads touching different pages of libc: the
# record killed half written (B) then differs from the slot it overwrites
# (A, two generations older) in its second half, so a tear is a tear.
libcopy k && "$PBITMAP" add -q --generations 1 k/libc.so.6 || fail "cannot stamp k/libc.so.6"
K=k/libc.so.6
cat >b.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
int main(void)
{
	char *w[] = { "pear", "apple", "fig" };
	char buf[64];
	time_t t = 0;
	qsort(w, 3, sizeof(w[0]), cmp);
	strftime(buf, sizeof(buf), "%c", gmtime(&t));
	printf("%s %g %s %ld\n", w[0], strtod("2.5e3", NULL), buf, strtol("77", NULL, 8));
	return 0;
}
EOF
gcc -O1 -Wl,-rpath,"$d/k" -o m-k2 b.c || fail "gcc b.c"
rec -q -- ./m-k >/dev/null && rec -q -- ./m-k2 >/dev/null || fail "record on $K"
PBITMAP_FAULT=list rec -- ./m-k 2>steps >/dev/null || fail "record with PBITMAP_FAULT=list"
mapfile -t points < <(sed -n 's/^fault point: //p' steps | grep '^in-place')
[[ ${#points[@]} == 4 ]] || fail "fault points of an in-place write: ${points[*]} ($(cat steps))"
for p in "${points[@]}"; do
	rec -q -- ./m-k >/dev/null && rec -q -- ./m-k >/dev/null || fail "record on $K"
	r=$(json "$K" runs) i=$(ino "$K") cur=$(json "$K" slot)
	PBITMAP_FAULT=$p rec -q -- ./m-k2 >/dev/null 2>&1
	expect_status 0 "$PBITMAP" verify "$K"
	now=$(json "$K" runs) s=$(slots "$K")
	[[ $(ino "$K") == "$i" ]] || fail "killed at $p: a new inode"
	case $p in
	in-place-durable) [[ $now == "$r" && $s != *-1* ]] ;;	# nothing written
	in-place-half) [[ $now == "$r" && $(json "$K" slot) == "$cur" && $s == *-1* ]] ;;	# torn
	*) [[ $now == $((r + 1)) && $(json "$K" slot) != "$cur" ]] ;;	# whole
	esac || fail "killed at $p: runs $r -> $now, slots $s, slot $cur -> $(json "$K" slot)"
	rec -q -- ./m-k2 >/dev/null || fail "record after a kill at $p"
	[[ $(json "$K" runs) == $((now + 1)) && $(slots "$K") != *-1* ]] ||
		fail "after a kill at $p: runs $(json "$K" runs), not $((now + 1)); slots $(slots "$K")"
	expect_status 0 "$PBITMAP" verify "$K"
	note "killed at $p: runs $r -> $now, slots $s; the next record: runs $(json "$K" runs), slots $(slots "$K")"
done
pass "kill -9 at ${points[*]}: verify accepts, the old generation (a torn other slot at in-place-half) or the new one, the same inode; the next record adds one"

# ---- concurrent writers and readers ---------------------------------------------------

# 4 writers recording for 5 s each, verify in a loop beside them.
r=$(json "$T" runs) i=$(ino "$T")
touch go
( bad=0 n=0
  while [[ -e go ]]; do
	"$PBITMAP" verify -q "$T" 2>>verify.err || bad=$((bad + 1))
	n=$((n + 1))
  done
  echo "$bad $n" >verify.bad ) &
vpid=$!
pids=()
for k in 1 2 3 4; do
	( n=0 end=$((SECONDS + 5))
	  while ((SECONDS < end)); do rec -q -- ./m-t >/dev/null 2>>"rec.$k.err" || exit 1; n=$((n + 1)); done
	  echo "$n" >"rec.$k.n" ) &
	pids+=($!)
done
for k in "${pids[@]}"; do wait "$k" || fail "a concurrent record failed: $(cat rec.*.err)"; done
rm go; wait "$vpid"
read -r bad nv <verify.bad
[[ $bad == 0 ]] || fail "verify failed $bad of $nv times beside the writers: $(sort -u verify.err)"
nr=$(($(cat rec.*.n | paste -sd+)))
[[ $(json "$T" runs) == $((r + nr)) && $(ino "$T") == "$i" ]] ||
	fail "$nr concurrent records: runs $r -> $(json "$T" runs) (lost updates?)"
pass "4 writers, $nr records at once: $nr generations, the same inode; $nv runs of verify beside them, none failed"

# ---- a data file keeps its inode, as it always did ----------------------------------

head -c 300000 /dev/urandom >data
"$PBITMAP" add -q data || fail "cannot stamp data"
i=$(ino data)
expect_status 0 rec -v -- python3 -c 'import mmap; f = open("data", "rb"); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ); m[0]; m[200000]'
grep -q "data: written in place (the same inode)" "$ERR" || fail "data file: $(cat "$ERR")"
[[ $(ino data) == "$i" && $(json data runs) == 1 ]] || fail "data file: inode or runs changed wrongly"
pass "a data file's attribute: written in place, the same inode"
