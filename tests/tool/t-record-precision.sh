#!/bin/bash
# t-record-precision: what `pbitmap record` learns is close to the ground
# truth, the pages the program really read (tests/lib/ground_truth.py:
# readahead and fault-around off, cold cache, mincore() after the run).
#
# The program is dynamic: it has its own copies of ld.so, libc and libz
# (interpreter and rpath point at them, so they are cold after a cache drop
# -- the system's libc is mapped by every running process and never is),
# it calls into libz, and reads chosen pages of a privately mapped 4 MiB
# data file.  All five files are stamped; record runs on a warm cache.
# Asserted with tests/lib/jaccard.py (Jaccard index |A&B|/|A|B| of the
# learned and the true pages): overall >= 0.90 and for each file >= 0.75.
# Before record turned fault-around off in its tracees it learned 64 KiB
# chunks: 0.28 overall here (data file 0.10, libc 0.22, libz 0.38), 0.42
# for `git --version` (after 0.99).

source "$(dirname "$0")/../lib.sh"
need gcc python3 ldd
J_OVERALL_MIN=0.90
J_FILE_MIN=0.75

d=$(tmpdir)
cd "$d" || fail "cd $d"
mkdir lib

libpath() {
	ldd "$1" | awk -v l="$2" '$1 ~ "^"l { print $3 }'
}

cat >prog.c <<'C'
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zlib.h>
/* prog FILE PAGE...: crc32 (libz) over one byte of each PAGE of FILE. */
int main(int argc, char **argv)
{
	const unsigned char *p;
	unsigned long crc = crc32(0, NULL, 0);
	struct stat st;
	int fd;

	if (argc < 2 || (fd = open(argv[1], O_RDONLY)) < 0 || fstat(fd, &st))
		return 2;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return 3;
	for (int i = 2; i < argc; i++)
		crc = crc32(crc, p + atol(argv[i]) * 4096, 1);
	return zlibVersion()[0] == '1' ? (int)(crc & 0) : 4;
}
C
gcc -O1 -o prog.sys prog.c -lz || fail "gcc"
interp=$(readelf -lW prog.sys | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[[ -n $interp ]] || fail "no interpreter in prog.sys"
for f in "$interp" "$(libpath prog.sys libc.so)" "$(libpath prog.sys libz.so)"; do
	[[ -f $f ]] || fail "library '$f' not found"
	cp "$(realpath "$f")" "lib/$(basename "$f")" || fail "cp $f"
done
gcc -O1 -o prog prog.c -lz -Wl,--dynamic-linker="$d/lib/$(basename "$interp")" -Wl,-rpath,"$d/lib" ||
	fail "gcc with private interpreter"
# Not `ldd | grep -q`: with pipefail, ldd killed by SIGPIPE fails the test.
libs=$(ldd ./prog) || fail "ldd ./prog"
[[ $libs == *"$d/lib/libz"* ]] || fail "prog does not use its own libz: $libs"
head -c 4194304 /dev/urandom >data.bin || fail "making data.bin"
files=(prog data.bin lib/*)
for f in "${files[@]}"; do
	"$PBITMAP" add -q "$f" || fail "pbitmap add $f"
done
run=(./prog data.bin 0 1 2 40 41 300 777 1023)

expect_status 0 "${run[@]}"	# warm
expect_status 0 "$PBITMAP" record -q -- "${run[@]}"
# shellcheck disable=SC2046
expect_status 0 python3 "$TOP/tests/lib/ground_truth.py" --require-cold -o truth.json \
	$(printf -- '-f %s ' "${files[@]}") -- "${run[@]}"
expect_status 0 python3 "$TOP/tests/lib/jaccard.py" truth.json "$PBITMAP"
cat "$OUT"
python3 - "$OUT" "$J_OVERALL_MIN" "$J_FILE_MIN" <<'PY' || fail "record is not precise enough (floors: overall $J_OVERALL_MIN, each file $J_FILE_MIN)"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
bad = []
for l in lines:
    j = float(re.search(r"J=([0-9.]+)", l).group(1))
    floor = float(sys.argv[2] if l.startswith("overall:") else sys.argv[3])
    if j < floor:
        bad.append(l)
if bad or len(lines) != 6:
    sys.exit("below the floor: %s" % bad)
PY
pass "record vs ground truth: $(tail -n 1 "$OUT")"
