set -u
HERE=/mnt/job
cd /var/tmp && rm -rf pj && mkdir pj && cd pj
stamp() { for f in "$@"; do pbitmap add -q "$f" 2>/dev/null; done; }
libs() { ldd "$1" | awk '/=> \//{print $3} /^\t\//{print $1}'; }
py=$(readlink -f /usr/bin/python3); gdb=$(readlink -f /usr/bin/gdb); cc1=$(gcc -print-prog-name=cc1)
stamp "$py" $(libs "$py") "$gdb" $(libs "$gdb") "$cc1" $(libs "$cc1")
printf 'int square(int x) { return x * x; }\n' > x.c
W1=("$py" -c "import json, email, http.client")
W2=("$gdb" -batch -ex "info version" /bin/true)
W3=("$cc1" -quiet -O2 x.c -o x.s)
pbitmap record -- "${W1[@]}" >/dev/null 2>&1
pbitmap record -- "${W2[@]}" >/dev/null 2>&1
pbitmap record -- "${W3[@]}" >/dev/null 2>&1
DPID=
dstart() { printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_JOIN_GAP_KB=%s\n' "$1" > conf; rm -f st; "$HERE/pbitmapd" -c conf -s "$PWD/st" 2>>d.log & DPID=$!; while [ ! -s st ]; do sleep 0.05; done; }
dstop() { [ -n "$DPID" ] && kill $DPID && wait $DPID 2>/dev/null; DPID=; }
cold() { # name cond cmd...
  local n=$1 c=$2; shift 2
  case $c in d*) g=${c#d}; g=${g#plan}; dstart "${g:-64}";; esac
  sync; echo 3 > /proc/sys/vm/drop_caches
  read -r r0 _ < /sys/block/vda/stat
  if [ "$c" = run ]; then /usr/bin/time -f "%F %e" -o t pbitmap run -- "$@" >/dev/null 2>&1; else /usr/bin/time -f "%F %e" -o t "$@" >/dev/null 2>&1; fi
  read -r r1 _ < /sys/block/vda/stat
  sleep 1
  read -r r2 _ < /sys/block/vda/stat
  dstop
  echo "$n $c $(tail -n1 t) $((r1 - r0)) $((r2 - r0))"
}
for i in 1 2 3; do
  for c in plain run d64 d256; do cold python3 $c "${W1[@]}"; cold gdb $c "${W2[@]}"; cold cc1 $c "${W3[@]}"; done
done
# plans: each program's files in ld.so's order, with their learned bitmaps
for p in "$py" "$gdb" "$cc1"; do
  pbitmap add -q --plan-size 64K "$p" && pbitmap plan "$p" $(libs "$p" | xargs -n1 readlink -f) || echo "plan of $p failed"
done
for i in 1 2 3; do
  for c in plain2 dplan64 dplan256; do cold python3 $c "${W1[@]}"; cold gdb $c "${W2[@]}"; cold cc1 $c "${W3[@]}"; done
done
cat d.log | grep -v "no bitmap" | tail -5
echo "kernel $(uname -r)"
