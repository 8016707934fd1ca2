# shellcheck shell=bash
# kernel-patch/tests/vmstatlib.sh: /proc/vmstat's counters, read by bash
# alone.  Sourced by coldlib.sh and by guest tests that read counters
# around every one of many execs (t-crafted*, t-pressure).
#
# Read in one sequential pass ($(<...)) and matched in the text: never
# `while read ... </proc/FILE`, where bash's read takes 128-byte chunks and
# seeks back to each line's end, and a seek in a seq_file regenerates the
# text with new values, so a counter that changed digits meanwhile tears a
# line (seen in CI: a t-crafted-mmap snapshot shifted by one field); and no
# here-string into read either, which bash 5.2 feeds through a pipe that
# read takes one byte per read(2), some 6000 system calls per look under
# TCG.  No program is run: this is called between dropping the caches and
# a measured start, and a program loaded cold would be measured.

# proc_lines FILE: FILE's text, read in one sequential pass.
proc_lines() {
	local text
	text=$(<"$1")
	printf '%s\n' "$text"
}

# vmstat_snap ARRAY NAME...: ARRAY[NAME] = each counter's value, all from
# one read of /proc/vmstat (empty for a counter the kernel has none of).
vmstat_snap() {
	local -n _vs_to=$1
	local _vs_text _vs_k
	shift
	_vs_text=$'\n'$(</proc/vmstat)
	for _vs_k; do
		if [[ $_vs_text =~ $'\n'"$_vs_k"' '([0-9]+) ]]; then
			_vs_to[$_vs_k]=${BASH_REMATCH[1]}
		else
			_vs_to[$_vs_k]=
		fi
	done
}

# vmstat_diff OUT FROM TO: OUT[NAME] = TO[NAME] - FROM[NAME] for each NAME
# of TO, two vmstat_snap arrays (a counter the kernel lacks counts as 0).
vmstat_diff() {
	local -n _vd_out=$1 _vd_from=$2 _vd_to=$3
	local _vd_k
	_vd_out=()
	for _vd_k in "${!_vd_to[@]}"; do
		_vd_out[$_vd_k]=$((${_vd_to[$_vd_k]:-0} - ${_vd_from[$_vd_k]:-0}))
	done
}

# vmstat_counter NAME: one counter (empty when the kernel has none).
vmstat_counter() {
	local -A _vc
	vmstat_snap _vc "$1"
	echo "${_vc[$1]}"
}
