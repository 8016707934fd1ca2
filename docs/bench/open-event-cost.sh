#!/bin/bash
# docs/bench/2026-12-04-open-event-cost.md: BIN is a pbitmapd build; run in a
# directory with on.conf (PBITMAP_DAEMON=yes, PBITMAP_DAEMON_LEARN=no) and
# many/0..19999, empty files, on a local filesystem (paths below: /var/tmp/oc).
# Prints the opens seen and the daemon's CPU on them for 20000 opens of distinct unstamped files.
bin=$1
rm -f status
$bin -c on.conf -s $PWD/status 2>/dev/null &
pid=$!
for _ in $(seq 100); do [[ -s status ]] && break; sleep 0.1; done
sleep 0.5
c() { awk -v k=$1 '$1 == k { print $2 }' status; }
o0=$(c opens) u0=$(c open_cpu_us)
/usr/bin/python3 -c '
import os
for i in range(20000):
    os.close(os.open("/var/tmp/oc/many/%d" % i, os.O_RDONLY))'
sleep 2
o1=$(c opens) u1=$(c open_cpu_us)
kill $pid; wait $pid 2>/dev/null
echo "$(basename $(dirname $(dirname $bin))) opens $((o1-o0)) cpu_us $((u1-u0)) per_event_us $(python3 -c "print(round(($u1-$u0)/max(1,$o1-$o0),2))")"
