#!/bin/bash
# t-record-offsets: `pbitmap record` keeps what it learns in memory that
# follows the pages a program used, not the offsets it mapped them at.
#
# A program maps 8 KiB of a sparse file (tmpfs: file sizes up to 2^63) at
# 4 TiB, 2^50 and 2^56 bytes and reads both pages.  Before, record sized a
# bitmap by the highest offset: 266 MiB at 4 TiB, and at 2^50 a failed
# malloc.  Asserted, with the peak RSS that /usr/bin/time reports:
#   - each run exits 0 with the program's status, no allocation failure,
#     and a peak RSS below 64 MiB (the ASan build idles at about 10 MiB);
#   - at 4 TiB the file is stamped and the granule holding the pages read
#     is the one marked;
#   - at 2^56 (past the 2^55 bytes any record can describe) record says the
#     pages are not learned there, once.

source "$(dirname "$0")/../lib.sh"
need gcc python3 mount truncate
[[ -x /usr/bin/time ]] || fail "missing /usr/bin/time (package time)"
PEAK_MAX_KB=65536

d=$(tmpdir)
cd "$d" || fail "cd $d"
mkdir mnt
mount -t tmpfs -o size=16m pbtest mnt || fail "cannot mount tmpfs"

cat >farmap.c <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
/* farmap FILE OFFSET: map 8 KiB of FILE at OFFSET and read both pages. */
int main(int argc, char **argv)
{
	volatile char *p;
	int fd;

	if (argc != 3 || (fd = open(argv[1], O_RDONLY)) < 0)
		return 2;
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, (off_t)strtoull(argv[2], NULL, 0));
	if (p == MAP_FAILED) {
		perror("mmap");
		return 3;
	}
	return p[0] + p[4096];	/* a sparse file reads as zeros */
}
C
gcc -O1 -o farmap farmap.c || fail "gcc"

# record_at EXP: record farmap on a sparse file mapped at 2^EXP bytes; the
# peak RSS in KiB is left in $peak.
record_at() {
	local e=$1 f=mnt/sparse$1
	truncate -s $(((1 << e) + 8192)) "$f" || fail "truncate $f"
	expect_status 0 /usr/bin/time -o time.out -f %M "$PBITMAP" record -- ./farmap "$f" $((1 << e))
	peak=$(tail -n 1 time.out)
	[[ $peak =~ ^[0-9]+$ ]] || fail "2^$e: no peak RSS from /usr/bin/time: $(cat time.out)"
	grep -qi "memory\|malloc" "$ERR" && fail "2^$e: an allocation failed: $(cat "$ERR")"
	((peak < PEAK_MAX_KB)) || fail "2^$e: peak RSS ${peak} KiB, more than ${PEAK_MAX_KB} KiB for 2 pages"
	note "mapped at 2^$e: peak RSS $peak KiB"
}

truncate -s $(((1 << 42) + 8192)) mnt/sparse42
"$PBITMAP" add -q mnt/sparse42 || fail "pbitmap add on a 4 TiB sparse file"
record_at 42
granules=$("$PBITMAP" show --json mnt/sparse42 | python3 -c '
import json, sys
f = json.load(sys.stdin)[0]
p = f["planes"][0]
print(f["pages"], " ".join("%d-%d" % tuple(r) for r in p["ranges"]))') || fail "show --json"
read -r nr ranges <<<"$granules"
[[ $ranges == "$((nr - 1))-$((nr - 1))" ]] ||
	fail "4 TiB: the last granule (of $nr) should be the only one marked, got '$ranges'"
pass "8 KiB mapped at 4 TiB: learned into the last granule, small peak RSS"

record_at 50
pass "8 KiB mapped at 2^50: no allocation failure, small peak RSS"

record_at 56
[[ $(grep -c "past the largest file a bitmap describes" "$ERR") == 1 ]] ||
	fail "2^56: no single note that those pages cannot be learned: $(cat "$ERR")"
pass "8 KiB mapped at 2^56: one note, not learned there, small peak RSS"
