#!/bin/bash
# t-fuzz: one minute of libFuzzer on every parser of untrusted bytes (ELF
# inspection, raw record check, xattr decoding; see
# pbitmap-tool/fuzz/fuzz_parse.c), starting from the seeds in
# pbitmap-tool/fuzz/seeds (stamped ELF files, a raw record, an xattr value).
# Fails on any crash, sanitizer report, leak or timeout; prints the number
# of executions.  `make fuzz` runs the same target for longer.
# Why: pbitmap reads every file of every package, as root.

source "$(dirname "$0")/../lib.sh"
FUZZ=${FUZZ:-$TOP/build/fuzz/fuzz_parse}
SEEDS=$TOP/pbitmap-tool/fuzz/seeds
SECONDS_TO_RUN=${FUZZ_SECONDS:-60}

[[ -x $FUZZ ]] || fail "$FUZZ is missing (make build/fuzz/fuzz_parse)"
[[ -d $SEEDS ]] && compgen -G "$SEEDS/*" >/dev/null || fail "no seeds in $SEEDS"
note "$(ls "$SEEDS" | wc -l) seeds"

work=$(tmpdir)
corpus=$work/corpus
mkdir "$corpus"
# crash-*/leak-*/timeout-* artifacts land in $work/ and are shown below.
"$FUZZ" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$work/" -print_final_stats=1 "$corpus" "$SEEDS" >"$work/log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
note "executions: ${execs:-unknown}, corpus: $(ls "$corpus" | wc -l) inputs"
if ((rc != 0)) || grep -qE '^==[0-9]+==ERROR|runtime error:|^SUMMARY:' "$work/log"; then
	tail -60 "$work/log"
	for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
		[[ -e $a ]] && { echo "artifact $a:"; od -A d -t x1 "$a" | head -20; }
	done
	fail "fuzzer exit status $rc after ${execs:-?} executions"
fi
[[ -n $execs && $execs -gt 0 ]] || fail "the fuzzer ran nothing: $(tail -5 "$work/log")"
pass "fuzz_parse: $execs executions in ${SECONDS_TO_RUN}s without a finding"
