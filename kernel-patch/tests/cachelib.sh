# shellcheck shell=bash
# kernel-patch/tests/cachelib.sh: helpers of the record-cache tests
# (t-cache-share, t-cache-attacker, debug/t-cache-uaf).  Sourced after
# coldlib.sh (fail, cold_*).
#
#   cache_build                  build ./cache-poke from cache-poke.c
#   stamp_sparse FILE SIZE PAGES a sparse data file of SIZE bytes, stamped
#                                (user.pbitmap) with PAGES marked (pbitmap set
#                                --pages syntax)
#   clone_stamped TEMPLATE PREFIX N
#                                N more sparse files PREFIX.0 ... of
#                                TEMPLATE's size with its user.pbitmap value:
#                                one record, N inodes, N cache entries
#   trace_lookups_ready          tracefs mounted, its buffers sized (the slow part)
#   trace_lookups_on [FILTER]    clear the trace, enable pbitmap_lookup
#                                (with the event filter FILTER)
#   trace_lookups PID RESULT     how many lookups of PID had RESULT
#   trace_lookups_off            disable it again
CACHE_T=/sys/kernel/tracing

cache_build() {
	gcc -std=c11 -O2 -Wall -Wextra -Werror -o cache-poke "$HERE/cache-poke.c" ||
		fail "cannot build cache-poke"
}

stamp_sparse() {
	truncate -s "$2" "$1" || fail "truncate $1"
	pbitmap add -q "$1" || fail "pbitmap add $1"
	pbitmap set -q --pages "$3" "$1" || fail "pbitmap set $1"
	chmod 644 "$1"
}

clone_stamped() {
	python3 - "$@" <<'PY' || fail "cannot clone $1"
import os, sys
template, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
value = os.getxattr(template, "user.pbitmap")
size = os.stat(template).st_size
for i in range(n):
    path = f"{prefix}.{i}"
    with open(path, "wb") as f:
        f.truncate(size)
    os.setxattr(path, "user.pbitmap", value)
    os.chmod(path, 0o644)
PY
}

trace_lookups_ready() {
	mountpoint -q "$CACHE_T" || mount -t tracefs nodev "$CACHE_T" || fail "cannot mount tracefs"
	[ -d "$CACHE_T/events/pbitmap/pbitmap_lookup" ] ||
		fail "the kernel has no pbitmap_lookup tracepoint"
	echo 8192 >"$CACHE_T/buffer_size_kb"
}

trace_lookups_on() {
	trace_lookups_ready
	echo >"$CACHE_T/trace"
	echo "${1:-0}" >"$CACHE_T/events/pbitmap/pbitmap_lookup/filter" ||
		fail "cannot set the event filter ${1:-}"
	echo 1 >"$CACHE_T/events/pbitmap/pbitmap_lookup/enable"
	echo 1 >"$CACHE_T/tracing_on"
}

# Trace lines begin "<comm>-<pid> [cpu] ...": the pid is the task's.
trace_lookups() {
	grep -cE -- "-$1 +\[[0-9]+\].* pbitmap_lookup: .* result=$2\$" "$CACHE_T/trace" || true
}

trace_lookups_off() {
	echo 0 >"$CACHE_T/events/pbitmap/pbitmap_lookup/enable" 2>/dev/null
	return 0
}
