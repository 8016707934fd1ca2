# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# second-instance-lib.sh: what second-instance.sh (the kernel's prefetch)
# and second-instance-daemon.sh (pbitmapd's) share; sourced from beside them.
#   settle              wait until vda has no read in flight (10 s at most)
#   stamp PROGRAM CMD.. stamp PROGRAM and the libraries ldd lists, learn
#                       them with `pbitmap record -- CMD..`, plan PROGRAM
#                       with them; the list of files in files.PROGRAM
#   resident_kib LIST   KiB of LIST's files in the page cache
settle() { local ir w i; for i in $(seq 200); do read -r ir w </sys/block/vda/inflight; [ "$ir" = 0 ] && return; sleep 0.05; done; }
stamp() {	# PROGRAM RECORD-COMMAND...: stamp PROGRAM and its libraries, record, plan
	local prog=$1 f
	local -a files real=()
	shift
	files=("$prog" $(ldd "$prog" | awk '/=>/ { print $3 } /ld-linux/ && !/=>/ { print $1 }'))
	for f in "${files[@]}"; do real+=("$(readlink -f "$f")"); done
	mapfile -t real < <(printf '%s\n' "${real[@]}" | awk '!seen[$0]++')
	pbitmap add -q "${real[@]}"
	pbitmap record -- "$@" >/dev/null 2>record.err || { cat record.err; exit 1; }
	pbitmap plan "$prog" "${real[@]}"
	echo "$prog: ${#real[@]} files; $(pbitmap show "$prog" | grep -m1 '^ *plan ')"
	printf '%s\n' "${real[@]}" >"files.$(basename "$prog")"
}
resident_kib() {	# LIST-FILE: KiB of its files in the page cache
	fincore --bytes --noheadings --raw --output RES $(cat "$1") | awk '{ s += $1 } END { print int(s / 1024) }'
}
