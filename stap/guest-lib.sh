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

# stap_kernel_check SCRIPT: the module fits the booted kernel (build-id.sh),
# said before staprun, whose own message is "exited early".  A module
# older than the kernel build is rebuilt by make stap.
# shellcheck source=stap/build-id.sh
. "$STAP_HERE/build-id.sh"
stap_kernel_check() {
	local why
	why=$(stap_build_id_check "$STAP_HERE/stap_${1//-/_}.ko") || fail "$why"
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
