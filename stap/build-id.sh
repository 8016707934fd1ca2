# shellcheck shell=bash
# stap/build-id.sh: whether a systemtap module fits the running kernel.
# Sourced in the guest by stap/guest-lib.sh (make stap-check, stap-demo)
# and by the benchmark's bench-job.sh (WAITS=1), so that both say the same.
#
# stap_build_id_check KO: systemtap places a module's probes from one link
# of the kernel, whose build-id stap/stap.mk wrote beside the module
# (stap_SCRIPT.kernel-build-id); staprun refuses to load it into another
# kernel ("Build-id mismatch", then staprun exits early, saying no more).
# Prints why KO does not fit this kernel, with both ids and uname -v, and
# returns 1; returns 0 when it fits.
stap_build_id_check() {
	local ko=$1 want hex have note=040000001400000003000000474e5500
	want=$(cat "${ko%.ko}.kernel-build-id" 2>/dev/null) || {
		echo "no ${ko%.ko}.kernel-build-id beside $ko (stap/stap.mk writes it)"
		return 1
	}
	hex=$(od -An -tx1 -v /sys/kernel/notes) || {
		echo "cannot read /sys/kernel/notes"
		return 1
	}
	hex=${hex//[$' \n']/}
	# The GNU build-id note: namesz 4, descsz 20, type 3, "GNU\0", then the id.
	[[ $hex == *$note* ]] || {
		echo "no GNU build-id note in /sys/kernel/notes"
		return 1
	}
	hex=${hex#*"$note"}
	have=${hex:0:40}
	[ "$have" = "$want" ] || {
		echo "$(basename "$ko") was built for the kernel with build-id $want; this one ($(uname -v)) has $have: the kernel was linked again after the module was built"
		return 1
	}
}
