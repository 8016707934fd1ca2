#!/bin/bash
# t-record-unmap: `pbitmap record` learns the pages of a mapping that the
# program takes away before it exits, however it does so.
#
# Before, record read page tables only when a process exited, so a data file
# the program mapped, read and unmapped was learned as 0 pages.  Each case
# below maps a stamped 4 MiB data file, reads some pages, makes the mapping
# go away, and carries on; the newest generation must mark the pages read
# and none far from them:
#   C, MAP_PRIVATE: munmap; mmap(MAP_FIXED) of anonymous memory over it;
#     madvise(MADV_DONTNEED); execve of another program; also with --window
#     (every system call stops then, no seccomp filter) -- exactly the
#     pages read, since fault-around is off in private file mappings;
#   the same C program built 32-bit (gcc -m32, i386 system calls: other
#     numbers, arch AUDIT_ARCH_I386), each way and with --window -- before,
#     record ignored a 32-bit program's system calls and learned 0 pages;
#     fault-around stays on in a 32-bit process, so the pages read and only
#     pages less than 16 from one (its 64 KiB window) may be marked;
#   Python's mmap module (MAP_SHARED, read-only): m.close(), and the
#     mapping dropped at interpreter exit -- fault-around cannot be turned
#     off in a read-only shared mapping, so only its 64 KiB window around
#     each page read may be marked (16 pages of 4 KiB).

source "$(dirname "$0")/../lib.sh"
need gcc python3 timeout
[[ -x /usr/bin/python3.11 ]] || fail "missing /usr/bin/python3.11"

d=$(tmpdir)
cd "$d" || fail "cd $d"

cat >unmap.c <<'C'
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
/* unmap HOW FILE PAGE...: map FILE privately, read one byte of each PAGE,
 * then take the mapping away by HOW (munmap, fixed, dontneed, exec), and
 * run on for a while (sleep 1 s) before exiting. */
int main(int argc, char **argv)
{
	const char *how = argv[1];
	volatile char *p;
	struct stat st;
	int fd, sum = 0;

	if (argc < 3 || (fd = open(argv[2], O_RDONLY)) < 0 || fstat(fd, &st))
		return 2;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return 3;
	close(fd);
	for (int i = 3; i < argc; i++)
		sum += p[atol(argv[i]) * 4096];
	if (!strcmp(how, "munmap")) {
		if (munmap((void *)p, (size_t)st.st_size))
			return 4;
	} else if (!strcmp(how, "fixed")) {
		if (mmap((void *)p, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) != p)
			return 5;
	} else if (!strcmp(how, "dontneed")) {
		if (madvise((void *)p, (size_t)st.st_size, MADV_DONTNEED))
			return 6;
	} else if (!strcmp(how, "exec")) {
		execl("/bin/sleep", "sleep", "1", (char *)NULL);
		return 7;
	} else {
		return 8;
	}
	sleep(1);
	return sum & 0;
}
C
gcc -O1 -o unmap unmap.c || fail "gcc"
gcc -m32 -O1 -o unmap32 unmap.c || fail "gcc -m32 (package gcc-multilib)"

# marked FILE: the newest generation's granules, on one line.
marked() {
	"$PBITMAP" show --json "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]["planes"][0]["ranges"]
print(" ".join(str(n) for a, b in r for n in range(a, b + 1)))'
}

# fault_around_only HOW "MARKED" PAGE...: every PAGE is marked, and every
# marked page lies in fault-around's 16-page window of one of them: HOW
# "aligned", the 16-page-aligned window; "near", less than 16 pages away
# (the window is aligned in the address space, and a 32-bit mapping need
# not be 64 KiB-aligned).
fault_around_only() {
	python3 - "$@" <<'PY'
import sys
aligned = sys.argv[1] == "aligned"
marked = {int(n) for n in sys.argv[2].split()}
read = [int(n) for n in sys.argv[3:]]
near = (lambda m, p: m // 16 == p // 16) if aligned else (lambda m, p: abs(m - p) < 16)
missing = [p for p in read if p not in marked]
extra = sorted(m for m in marked if not any(near(m, p) for p in read))
if missing or extra:
    sys.exit("missing %s, marked far from any page read: %s" % (missing, extra))
PY
}

newdata() {
	rm -f data.bin
	head -c 4194304 /dev/urandom >data.bin || fail "making data.bin"
	"$PBITMAP" add -q data.bin || fail "pbitmap add data.bin"
}

for how in munmap fixed dontneed exec; do
	newdata
	expect_status 0 timeout -k 5 60 "$PBITMAP" record -- ./unmap "$how" data.bin 0 40 300 301 777
	m=$(marked data.bin) || fail "show --json data.bin"
	[[ $m == "0 40 300 301 777" ]] || fail "C, $how: marked '$m', expected '0 40 300 301 777'"
	pass "C, mapping taken away by $how: exactly the pages read are learned"
done

newdata
expect_status 0 timeout -k 5 60 "$PBITMAP" record --window 3 -- ./unmap munmap data.bin 3 500
m=$(marked data.bin) || fail "show --json data.bin"
[[ $m == "3 500" ]] || fail "C, munmap within --window: marked '$m', expected '3 500'"
pass "--window (syscall stops): a mapping unmapped within the window is learned"

for how in munmap fixed dontneed exec; do
	newdata
	expect_status 0 timeout -k 5 60 "$PBITMAP" record -- ./unmap32 "$how" data.bin 0 40 300 301 777
	m=$(marked data.bin) || fail "show --json data.bin"
	out=$(fault_around_only near "$m" 0 40 300 301 777) || fail "32-bit C, $how: $out (marked: $m)"
	pass "32-bit C, mapping taken away by $how: the pages read are learned (with fault-around's)"
done
newdata
expect_status 0 timeout -k 5 60 "$PBITMAP" record --window 3 -- ./unmap32 munmap data.bin 3 500
m=$(marked data.bin) || fail "show --json data.bin"
out=$(fault_around_only near "$m" 3 500) || fail "32-bit C, munmap within --window: $out (marked: $m)"
pass "32-bit C, --window: a mapping unmapped within the window is learned"

pyread='
import mmap, sys
f = open("data.bin", "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
s = m[0] + m[300 * 4096] + m[1000 * 4096]
if sys.argv[1] == "close":
    m.close()
    f.close()
    import time
    time.sleep(0.5)
'
for how in close atexit; do
	newdata
	expect_status 0 timeout -k 5 60 "$PBITMAP" record -- /usr/bin/python3.11 -c "$pyread" "$how"
	m=$(marked data.bin) || fail "show --json data.bin"
	out=$(fault_around_only aligned "$m" 0 300 1000) || fail "Python, mmap $how: $out (marked: $m)"
	pass "Python mmap, unmapped by $how: pages 0 300 1000 learned (within fault-around's 64 KiB)"
done
