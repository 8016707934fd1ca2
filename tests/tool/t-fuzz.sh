#!/bin/bash
# t-fuzz: libFuzzer on the three targets, 15 s each, from the seeds in
# pbitmap-tool/fuzz/seeds (stamped ELF files, an interrupted stamp, a raw
# record, an xattr value, an ELF marker, two profiles):
#   fuzz_parse  every parser of untrusted bytes (ELF inspection, raw record
#               check, xattr decoding, marker check; pbitmap-tool/fuzz/fuzz_parse.c);
#   fuzz_import profiles: parse, round trip, carrying into a large ELF
#               file, `import` into an ELF and a data file (a refused one
#               changes nothing; pbitmap-tool/fuzz/fuzz_import.c);
#   fuzz_stamp  the verbs that write, run on a file holding the input (add,
#               verify, show, digest, set, clear, re-stamp, strip), asserting
#               that a failed add changes nothing and strip gives back what
#               undo printed (pbitmap-tool/fuzz/fuzz_stamp.c).
# Fails on any crash, sanitizer report, failed assertion, leak or timeout
# (showing the input and, run again, the target's own messages); prints the
# number of executions.  `make fuzz` runs the same targets for longer.
# Why: pbitmap reads every file of every package, as root, and writes them.

source "$(dirname "$0")/../lib.sh"
FUZZ_DIR=${FUZZ_DIR:-$TOP/build/fuzz}
SEEDS=$TOP/pbitmap-tool/fuzz/seeds
SECONDS_TO_RUN=${FUZZ_SECONDS:-15}

[[ -d $SEEDS ]] && compgen -G "$SEEDS/*" >/dev/null || fail "no seeds in $SEEDS"
note "$(ls "$SEEDS" | wc -l) seeds"

for target in fuzz_parse fuzz_stamp fuzz_import; do
	fuzz=$FUZZ_DIR/$target
	[[ -x $fuzz ]] || fail "$fuzz is missing (make build/fuzz/$target)"
	work=$(tmpdir)
	corpus=$work/corpus
	mkdir "$corpus"
	# crash-*/leak-*/timeout-* artifacts land in $work/ and are shown below.
	# -close_fd_mask=3: the tool's messages for rejected inputs are not
	# the fuzzer's log (sanitizer reports still are).
	"$fuzz" -close_fd_mask=3 -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$work/" -print_final_stats=1 \
		"$corpus" "$SEEDS" >"$work/log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
	note "$target: executions: ${execs:-unknown}, corpus: $(ls "$corpus" | wc -l) inputs"
	if ((rc != 0)) || grep -qE '^==[0-9]+==ERROR|runtime error:|^SUMMARY:' "$work/log"; then
		tail -60 "$work/log"
		for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
			[[ -e $a ]] || continue
			echo "artifact $a:"
			od -A d -t x1 "$a" | head -20
			echo "the target's messages on it:"
			"$fuzz" "$a" 2>&1 | grep -vE '^ +#|^INFO:' | head -20
		done
		fail "$target: fuzzer exit status $rc after ${execs:-?} executions"
	fi
	[[ -n $execs && $execs -gt 0 ]] || fail "$target ran nothing: $(tail -5 "$work/log")"
	pass "$target: $execs executions in ${SECONDS_TO_RUN}s without a finding"
done
