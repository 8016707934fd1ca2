# pbitmapd's learning (learn.c, learn.bpf.c) against `pbitmap record`, on a
# stock kernel: `kernel-patch/scripts/vm --job THIS pbitmapd` (root disk at
# 150 IOPS).  Every file of the three start-ups is stamped; their bitmaps
# are learned (A) by the daemon from 3 cold runs of each workload, or (B) by
# one `pbitmap record` of each; each set is then measured with the daemon
# reading ahead (learning off) against no daemon, 3 interleaved rounds.
set -u
HERE=/mnt/job
cd /var/tmp && rm -rf pl && mkdir pl && cd pl
stamp() { for f in "$@"; do pbitmap add -q "$f" 2>/dev/null; done; }
libs() { ldd "$1" | awk '/=> \//{print $3} /^\t\//{print $1}' | xargs -n1 readlink -f; }
py=$(readlink -f /usr/bin/python3); gdb=$(readlink -f /usr/bin/gdb); cc1=$(gcc -print-prog-name=cc1)
ALL=$(printf '%s\n' "$py" $(libs "$py") "$gdb" $(libs "$gdb") "$cc1" $(libs "$cc1") | sort -u)
printf 'int square(int x) { return x * x; }\n' > x.c
W1=("$py" -c "import json, email, http.client")
W2=("$gdb" -batch -ex "info version" /bin/true)
W3=("$cc1" -quiet -O2 x.c -o x.s)
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN_INTERVAL_S=0\n' > learn.conf
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\n' > read.conf
DPID=
dstart() { rm -f st; "$HERE/pbitmapd" -c "$1" -s "$PWD/st" 2>>d.log & DPID=$!; while [ ! -s st ]; do sleep 0.05; done; }
dstop() { [ -n "$DPID" ] && kill $DPID && wait $DPID 2>/dev/null; DPID=; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
pages() { # the prefetch sets' pages over the workload's files
  local n=0 f p
  for f in "$1" $(libs "$1"); do
    p=$(pbitmap show "$f" 2>/dev/null | awk '$1 == "prefetch" { print $2 }')
    n=$((n + ${p:-0}))
  done
  echo $n
}
cold() { # name cond cmd...
  local n=$1 c=$2; shift 2
  [ "$c" != plain ] && dstart read.conf
  drop
  read -r r0 _ < /sys/block/vda/stat
  /usr/bin/time -f "%F %e" -o t "$@" >/dev/null 2>&1
  read -r r1 _ < /sys/block/vda/stat
  dstop
  echo "$n $c $(tail -n1 t) $((r1 - r0))"
}
measure() { for i in 1 2 3; do for c in plain "$1"; do
  cold python3 "$c" "${W1[@]}"; cold gdb "$c" "${W2[@]}"; cold cc1 "$c" "${W3[@]}"; done; done; }

stamp $ALL
read -r _ _ _ _ w0 _ < /sys/block/vda/stat
# (A) the daemon learns: a first run of each tells it the programs' policy,
# then 3 cold runs each, interleaved
dstart learn.conf
for i in 0 1 2 3; do
  for w in 1 2 3; do drop; eval "\"\${W$w[@]}\"" >/dev/null 2>&1; sleep 1; done
done
while [ "$(awk '$1 == "pending" { print $2 }' st)" != 0 ]; do sleep 1; done	# the writers
read -r _ _ _ _ w1 _ < /sys/block/vda/stat
echo "write requests while learning: $((w1 - w0))"
grep -E "^(learners|learn_written|learn_pages|learn_skip|learn_lost|learn_events)" st
dstop
echo "pages daemon-learned: python3 $(pages "$py") gdb $(pages "$gdb") cc1 $(pages "$cc1")"
measure dlearn
# (B) pbitmap record, on fresh bitmaps
for f in $ALL; do pbitmap strip -q "$f" 2>/dev/null; done
stamp $ALL
pbitmap record -- "${W1[@]}" >/dev/null 2>&1
pbitmap record -- "${W2[@]}" >/dev/null 2>&1
pbitmap record -- "${W3[@]}" >/dev/null 2>&1
read -r _ _ _ _ w2 _ < /sys/block/vda/stat
echo "write requests while stamping afresh and recording: $((w2 - w1))"
echo "pages record-learned: python3 $(pages "$py") gdb $(pages "$gdb") cc1 $(pages "$cc1")"
measure record
echo "kernel $(uname -r)"
