# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# second-instance-lib.sh: what second-instance.sh (the kernel's prefetch)
# and second-instance-daemon.sh (pbitmapd's) share; sourced from beside them.
#   settle              wait until vda has no read in flight (10 s at most)
#   stamp PROGRAM CMD.. stamp PROGRAM and the libraries ldd lists, learn
#                       them with `pbitmap record -- CMD..`, plan PROGRAM
#                       with them; the list of files in files.PROGRAM
#   resident_kib LIST   KiB of LIST's files in the page cache
#   one LABEL LIST CMD1... -- CMD2...
#                       the caches dropped, CMD1 (instance 1) started in the
#                       background, /var/tmp/fill read (reclaim takes what
#                       is not mapped), then CMD2 (instance 2) timed; one
#                       line: LIST's KiB cached before it, vda's read
#                       requests and KiB during it, what counters_after
#                       (the caller's, after its counters_before) prints,
#                       its milliseconds
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
one() {
	local label=$1 list=$2 t0 t1 r0 r1 se0 se1 bg before
	local -a first=() second=()
	shift 2
	while [ "$1" != -- ]; do first+=("$1"); shift; done
	shift
	second=("$@")
	sync; echo 3 >/proc/sys/vm/drop_caches; sleep 1
	"${first[@]}" >/dev/null 2>&1 &
	bg=$!
	sleep 8; settle
	cat /var/tmp/fill >/dev/null
	before=$(resident_kib "$list")
	counters_before
	read -r r0 _ se0 _ </sys/block/vda/stat
	t0=${EPOCHREALTIME/./}
	"${second[@]}" >/dev/null 2>&1
	t1=${EPOCHREALTIME/./}
	settle
	read -r r1 _ se1 _ </sys/block/vda/stat
	echo "$label resident-before-KiB $before requests $((r1 - r0)) KiB $(((se1 - se0) / 2)) $(counters_after) ms $(((t1 - t0) / 1000))"
	kill -9 "$bg" 2>/dev/null || true; pkill -9 -x sleep || true
	wait "$bg" 2>/dev/null || true
}
