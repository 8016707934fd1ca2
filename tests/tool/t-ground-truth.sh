#!/bin/bash
# t-ground-truth: tests/lib/ground_truth.py, the measure `record`, the
# kernel's learning and the benchmark are compared with, reports exactly
# the pages a command read, and puts every setting back.
#
#   - a program that maps a 4 MiB file and reads pages 0 40 300: those three
#     pages exactly, nothing cached before the run, the program's exit
#     status in the JSON; dd reading one 4 KiB block with read(): that
#     page alone (readahead is really off);
#   - read_ahead_kb of the device and fault_around_bytes (when debugfs lets
#     us read it) are as before, after a normal run and after SIGTERM in
#     the middle of one (exit 130);
#   - a file on tmpfs (no block device, no readahead to turn off) is refused
#     with a message, exit 1.
# Where debugfs is locked down (kernel_lockdown), fault_around_bytes cannot
# be set; the JSON says so, and the counts above still hold: fault-around
# maps pages already cached, it never reads any.

source "$(dirname "$0")/../lib.sh"
need gcc python3 dd mount
GT="python3 $TOP/tests/lib/ground_truth.py"

d=$(tmpdir)
cd "$d" || fail "cd $d"

cat >touch.c <<'C'
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
/* touch FILE CODE PAGE...: map FILE, read a byte of each PAGE, exit CODE. */
int main(int argc, char **argv)
{
	volatile char *p;
	struct stat st;
	int fd, sum = 0;

	if (argc < 3 || (fd = open(argv[1], O_RDONLY)) < 0 || fstat(fd, &st))
		return 100;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return 101;
	for (int i = 3; i < argc; i++)
		sum += p[atol(argv[i]) * 4096];
	return atoi(argv[2]) + (sum & 0);
}
C
gcc -O1 -o touch touch.c || fail "gcc"
head -c 4194304 /dev/urandom >data.bin || fail "making data.bin"

dev=$(stat -c '%Hd:%Ld' data.bin)
ra_file=$(python3 -c '
import sys; sys.path.insert(0, sys.argv[1]); import ground_truth
print(ground_truth.bdi_of(sys.argv[2]))' "$TOP/tests/lib" data.bin) || fail "no readahead setting for $dev"
settings() {
	cat "$ra_file"
	cat /sys/kernel/debug/fault_around_bytes 2>/dev/null || echo "fault_around_bytes unreadable"
}
before=$(settings)

# pages JSON FILE: "cached_before count: first-last ..." for FILE in JSON.
pages() {
	python3 - "$1" "$2" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
for f in r["files"]:
    if f["path"] == os.path.realpath(sys.argv[2]):
        print(f["cached_before"], "%d:" % f["count"], " ".join("%d-%d" % tuple(x) for x in f["pages"]))
PY
}

expect_status 0 $GT -o truth.json -f data.bin -- ./touch data.bin 3 0 40 300
[[ $(pages truth.json data.bin) == "0 3: 0-0 40-40 300-300" ]] ||
	fail "mmap reads of 0 40 300: got '$(pages truth.json data.bin)' (cached_before count: ranges)"
status=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_status"])' truth.json)
[[ $status == 3 ]] || fail "exit_status $status in the JSON, the command exited 3"
fa=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["fault_around_bytes"], r["fault_around_error"])' truth.json)
note "fault_around_bytes, error: $fa"
[[ $(settings) == "$before" ]] || fail "settings not restored: before '$before', after '$(settings)'"
pass "mmap reads: exactly pages 0 40 300; exit status kept; settings restored"

expect_status 0 $GT -o truth.json -f data.bin -- dd if=data.bin of=/dev/null bs=4096 skip=7 count=1 status=none
[[ $(pages truth.json data.bin) == "0 1: 7-7" ]] ||
	fail "read() of block 7: got '$(pages truth.json data.bin)'"
pass "read() of one block: exactly that page"

$GT -o term.json -f data.bin -- sleep 30 2>term.err &
gt=$!
for _ in $(seq 100); do
	[[ $(cat "$ra_file") == 0 ]] && pgrep -x -P "$gt" sleep >/dev/null && break
	sleep 0.1
done
[[ $(cat "$ra_file") == 0 ]] || fail "read_ahead_kb never became 0 during the run"
kill -TERM "$gt"
wait "$gt"
rc=$?
((rc == 130)) || fail "SIGTERM: exit $rc, expected 130: $(cat term.err)"
[[ $(settings) == "$before" ]] || fail "settings not restored after SIGTERM: before '$before', after '$(settings)'"
pass "SIGTERM in the middle: exit 130, settings restored"

mkdir mnt
mount -t tmpfs -o size=8m pbtest mnt || fail "mount tmpfs"
cp data.bin mnt/ || fail "cp"
expect_status 1 $GT -f mnt/data.bin -- ./touch mnt/data.bin 0 1
grep -q "no block device" "$ERR" || fail "tmpfs file: no clear message: $(cat "$ERR")"
pass "a file on tmpfs is refused with a message"
