# shellcheck shell=bash
# kernel-patch/tests/gcc-workload.sh: the guest workload that t-gcc-prefetch
# and the stap checks (stap/guest-lib.sh) cold-start.  Sourced.

# gcc_workload DIR: stamped copies of the gcc driver, cc1 and as in DIR/bin
# (-B makes the driver use our cc1 and as), DIR/x.c, a one-line C file, and
# the copies' bitmaps learned by `pbitmap record` of one compile (with
# pbitmap off), whose output is DIR/learned.s.
gcc_workload() {
	GCC_W=$1
	mkdir -p "$GCC_W/bin"
	cp "$(readlink -f /usr/bin/gcc)" "$GCC_W/bin/gcc"
	cp "$(gcc -print-prog-name=cc1)" "$GCC_W/bin/cc1"
	cp "$(readlink -f "$(command -v as)")" "$GCC_W/bin/as"
	pbitmap add -q "$GCC_W"/bin/gcc "$GCC_W"/bin/cc1 "$GCC_W"/bin/as
	printf 'int square(int x) { return x * x; }\n' >"$GCC_W/x.c"
	echo 0 >/proc/sys/vm/pbitmap_enabled
	gcc_compile "$GCC_W/learned.s" pbitmap record --
}

# gcc_compile OUTPUT [WRAPPER...]: the workload's compile, as learned, run
# under WRAPPER (e.g. /usr/bin/time -o FILE) when one is given.
gcc_compile() { "${@:2}" "$GCC_W/bin/gcc" -B"$GCC_W/bin/" -O2 -S "$GCC_W/x.c" -o "$1"; }
