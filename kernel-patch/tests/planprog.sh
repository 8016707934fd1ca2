# shellcheck shell=bash
# kernel-patch/tests/planprog.sh: the program the plan tests run
# (t-crafted-plan on the patched kernel, t-daemon on the stock one).
# Sourced; the caller defines fail().
#
# plan_prog DIR [USLEEP]: in DIR, two private libraries of 512 KiB each
# (liba.so, libb.so; stamped, pages 0-3 marked) and prog, linked with
# them through DT_RUNPATH, printing "plan ok 2" then sleeping USLEEP
# microseconds (default 0: a daemon must find the process still running
# to take its root); prog stamped with a 16 KiB plan area holding the plan
# "liba.so, libb.so".  Sets PLAN_WANT to what prog prints.  With
# PLAN_PROG_HOLD=PATH in its environment, prog waits instead until PATH
# exists (at most 30 s): a test that needs the process alive while a daemon
# takes it lets it go once the daemon is done, instead of sleeping a fixed
# time long enough for a loaded host.
plan_prog() {
	local dir=$1 sleep_us=${2:-0} n
	for n in a b; do
		printf 'const char pad_%s[512 << 10] = { 1 };\nint f_%s(void) { return pad_%s[0]; }\n' \
			"$n" "$n" "$n" >"$dir/$n.c"
		gcc -O1 -shared -fPIC -o "$dir/lib$n.so" "$dir/$n.c" || fail "cannot build lib$n.so"
	done
	printf '#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\nint f_a(void); int f_b(void);\nint main(void)\n{\n\tconst char *hold = getenv("PLAN_PROG_HOLD");\n\n\tprintf("plan ok %%d\\n", f_a() + f_b());\n\tfflush(stdout);\n\tif (hold)\n\t\tfor (int i = 0; i < 3000 && access(hold, F_OK); i++)\n\t\t\tusleep(10000);\n\telse if (%d)\n\t\tusleep(%d);\n\treturn 0;\n}\n' \
		"$sleep_us" "$sleep_us" >"$dir/p.c"
	gcc -O1 -o "$dir/prog" "$dir/p.c" -L"$dir" -la -lb -Wl,-rpath,"$dir" || fail "cannot build prog"
	PLAN_WANT=$("$dir/prog")
	pbitmap add -q "$dir/liba.so" "$dir/libb.so" || fail "cannot stamp the libraries"
	pbitmap set --pages 0-3 "$dir/liba.so" "$dir/libb.so"
	pbitmap add -q --plan-size 16K "$dir/prog" || fail "cannot stamp prog with a plan area"
	pbitmap plan "$dir/prog" "$dir/liba.so" "$dir/libb.so" || fail "pbitmap plan"
}
