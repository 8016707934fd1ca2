#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# t-learn-share: one user's learners cannot stop learning for the others.
#
# Pending learned sets are bounded for the machine (256 sets, 8 MiB) and,
# per user, to a quarter of each (64 sets, 2 MiB), counted in the real
# user ID's user_struct.  A user (uid 1001) maps 300 stamped data files of
# their own in one learner's start-up window and keeps them mapped, so
# that the sets stay pending; then another user (uid 1002) maps one file
# of their own.  map-hold.py reads the counters itself, around its own
# mappings.  Asserts: the first user's learner gets 64 sets and 236
# pbitmap_learn_skip_full, and the second user's file gets its set, with
# no skip.  Without the per-user share the first user took all 256 sets
# and the second user's set was refused.  The files are sparse (1 MiB,
# above the readahead window, so each has its record looked up).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/cachelib.sh
. "$HERE/cachelib.sh"
cold_begin t-learn-share
# The FIFOs are opened read-write: neither end ever waits for the other.
cleanup() {
	[ -p go ] && echo go 1<>go
	wait 2>/dev/null || true
	learn_reset
	cold_reset
	cd /
	rm -rf "$W"
}
trap cleanup EXIT
chmod 755 "$W"
cold_need_sysctls pbitmap_enabled pbitmap_learn pbitmap_learn_window_ms \
	pbitmap_learn_data_interval_s
cold_need_counters pbitmap_learn_sets pbitmap_learn_skip_full
cold_missing
FIRST=1001 SECOND=1002 N=300 SHARE=64

stamp_sparse tmpl 1M 0-3
clone_stamped tmpl f "$N"
clone_stamped tmpl g 1
chown "$FIRST:$FIRST" f.*
chown "$SECOND:$SECOND" g.0
mkfifo ready go
chmod 666 ready go
# The learners run as other users: their script must be where they can read it.
cp "$HERE/map-hold.py" .
chmod 644 map-hold.py

echo 1 >/proc/sys/vm/pbitmap_enabled
echo 1 >/proc/sys/vm/pbitmap_learn
echo 60000 >/proc/sys/vm/pbitmap_learn_window_ms
echo 0 >/proc/sys/vm/pbitmap_learn_data_interval_s
as() { setpriv --reuid="$1" --regid="$1" --clear-groups "${@:2}"; }

as $FIRST python3 map-hold.py --hold "$W/ready" "$W/go" f.* >first.out 2>first.err &
holder=$!
read -t 120 -r _ 0<>ready || fail "the first user's learner did not map its files: $(cat first.err)"
read -r _ sets1 _ full1 <first.out
as $SECOND python3 map-hold.py g.0 >second.out 2>second.err ||
	fail "the second user's learner failed: $(cat second.err)"
read -r _ sets2 _ full2 <second.out
echo go 1<>go
wait $holder || fail "the first user's learner failed: $(cat first.err)"
echo "first user, $N files: $sets1 sets, $full1 refused as full; second user, 1 file: $sets2 sets, $full2 refused"
((sets1 == SHARE && full1 == N - SHARE)) ||
	fail "the first user's learner got $sets1 sets and $full1 refusals, expected its share: $SHARE and $((N - SHARE))"
((sets2 == 1 && full2 == 0)) ||
	fail "the second user's file got $sets2 sets and $full2 refusals while the first user's sets were pending"
echo "PASS: one user holds $SHARE of the 256 pending sets; another user still learns"
