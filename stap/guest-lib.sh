# shellcheck shell=bash
# stap/guest-lib.sh: shell functions for the guest side of make stap-check
# and make stap-demo (sourced; the modules, stap_SCRIPT.ko, and stap-version
# lie beside it).

STAP_HERE=${STAP_HERE:-$PWD}
stap_pids=()
stap_names=()

fail() { echo "FAIL: $*"; exit 1; }

# The modules were built by the host's systemtap; staprun must be the same.
stap_version_check() {
	local want have
	want=$(cat "$STAP_HERE/stap-version")
	have=$(dpkg-query -W -f='${Version}' systemtap-runtime 2>/dev/null || true)
	[ "$have" = "$want" ] ||
		fail "guest staprun is '${have:-missing}', modules built by systemtap $want on the host (make image)"
}

# gcc_workload DIR, gcc_compile OUTPUT: the gcc cold-start workload of the
# kernel tests, staged beside this file by stap.mk.
# shellcheck source=kernel-patch/tests/gcc-workload.sh
. "$STAP_HERE/gcc-workload.sh"

# stap_kernel_check SCRIPT: the module's probes were placed from one link
# of the kernel, whose build-id stap.mk wrote beside it; systemtap refuses
# to load it into another ("Build-id mismatch", then staprun exits).  Said
# here, with both ids and the booted kernel's uname -v: a module older than
# the kernel build is rebuilt by make stap.
stap_kernel_check() {
	local mod=stap_${1//-/_} want hex have
	want=$(cat "$STAP_HERE/$mod.kernel-build-id" 2>/dev/null) ||
		fail "no $mod.kernel-build-id beside $mod.ko (stap/stap.mk writes it)"
	hex=$(od -An -tx1 -v /sys/kernel/notes) || fail "cannot read /sys/kernel/notes"
	hex=${hex//[$' \n']/}
	# The GNU build-id note: namesz 4, descsz 20, type 3, "GNU\0", then the id.
	[[ $hex == *040000001400000003000000474e5500* ]] ||
		fail "no GNU build-id note in /sys/kernel/notes"
	hex=${hex#*040000001400000003000000474e5500}
	have=${hex:0:40}
	[ "$have" = "$want" ] ||
		fail "$mod.ko was built for the kernel with build-id $want; this one ($(uname -v)) has $have: the kernel was linked again after the module was built"
}

# start_stap SCRIPT OUTPUT [ARG...]: staprun SCRIPT.ko in the background and
# wait until its begin probe has printed "SCRIPT.stp: tracing ...".
start_stap() {
	local script=$1 out=$2
	shift 2
	stap_kernel_check "$script"
	staprun -o "$out" "$STAP_HERE/stap_${script//-/_}.ko" "$@" &
	stap_pids+=($!)
	stap_names+=("$script")
	for _ in $(seq 600); do
		grep -q "^$script.stp: tracing" "$out" 2>/dev/null && return 0
		kill -0 "${stap_pids[-1]}" 2>/dev/null || fail "staprun $script.ko exited early"
		sleep 0.1
	done
	fail "staprun $script.ko did not start within 60 s"
}

# stop_stap: SIGINT every staprun started (their end probes print), wait
# for each and fail if any exited with an error (`wait P1 P2` would return
# the status of the last one only).
stop_stap() {
	local i rc failed=""
	[ ${#stap_pids[@]} = 0 ] && return 0
	kill -INT "${stap_pids[@]}" 2>/dev/null || true
	for i in "${!stap_pids[@]}"; do
		wait "${stap_pids[i]}"
		rc=$?
		[ "$rc" = 0 ] || failed="$failed ${stap_names[i]}.ko (exit $rc)"
	done
	stap_pids=()
	stap_names=()
	[ -z "$failed" ] || fail "staprun exited with an error:$failed"
}
