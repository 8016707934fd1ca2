set -u
[ -e /proc/sys/vm/pbitmap_enabled ] || { echo "not the patched kernel"; exit 1; }
echo 0 > /proc/sys/vm/pbitmap_enabled; echo 0 > /proc/sys/vm/pbitmap_learn 2>/dev/null
HERE=/mnt/job
cd /var/tmp && rm -rf pj && mkdir pj && cd pj
gcc -std=c11 -O2 -o fill-evict "$HERE/fill-evict.c" || exit 1
truncate -s 3G fill
stamp() { for f in "$@"; do pbitmap add -q "$f" 2>/dev/null; done; }
libs() { ldd "$1" | awk '/=> \//{print $3} /^\t\//{print $1}' | xargs -n1 readlink -f; }
py=$(readlink -f /usr/bin/python3); gdb=$(readlink -f /usr/bin/gdb); cc1=$(gcc -print-prog-name=cc1)
stamp "$py" $(libs "$py") "$gdb" $(libs "$gdb") "$cc1" $(libs "$cc1")
printf 'int square(int x) { return x * x; }\n' > x.c
W1=("$py" -c "import json, email, http.client")
W2=("$gdb" -batch -ex "info version" /bin/true)
W3=("$cc1" -quiet -O2 x.c -o x.s)
pbitmap record -- "${W1[@]}" >/dev/null 2>&1
pbitmap record -- "${W2[@]}" >/dev/null 2>&1
pbitmap record -- "${W3[@]}" >/dev/null 2>&1
printf 'PBITMAP_DAEMON=yes\n' > conf
DPID=
dstart() { rm -f st; "$HERE/pbitmapd" -c conf -s "$PWD/st" 2>>d.log & DPID=$!; while [ ! -s st ]; do sleep 0.05; done; }
dstop() { [ -n "$DPID" ] && kill $DPID && wait $DPID 2>/dev/null; DPID=; }
cold() { # name cond cmd...
  local n=$1 c=$2; shift 2
  local files="$1 $(libs "$1")" c0 c1
  echo 0 > /proc/sys/vm/pbitmap_enabled
  case $c in *daemon*|p-plan|plan) dstart;; esac
  case $c in
  p-*) sync; ./fill-evict fill $files >/dev/null || echo "fill-evict failed";;
  *) sync; echo 3 > /proc/sys/vm/drop_caches;;
  esac
  case $c in *kernel*|*kplan*) echo 1 > /proc/sys/vm/pbitmap_enabled;; esac
  c0=$(awk '/^Cached:/{print $2}' /proc/meminfo)
  read -r r0 _ < /sys/block/vda/stat
  /usr/bin/time -f "%F %e" -o t "$@" >/dev/null 2>&1
  read -r r1 _ < /sys/block/vda/stat
  sleep 1
  read -r r2 _ < /sys/block/vda/stat
  [ -n "$DPID" ] && skips=$(awk '$1=="skip_pressure"||$1=="skip_gone"{printf "%s=%s ", $1, $2}' st) || skips=
  dstop
  echo "$n $c $(tail -n1 t) $((r1 - r0)) $((r2 - r0)) $skips"
}
round() { for c in "$@"; do cold python3 $c "${W1[@]}"; cold gdb $c "${W2[@]}"; cold cc1 $c "${W3[@]}"; done; }
for i in 1 2 3; do round off kernel daemon p-off p-kernel p-daemon; done
for p in "$py" "$gdb" "$cc1"; do
  pbitmap add -q --plan-size 64K "$p" && pbitmap plan "$p" $(libs "$p") || echo "plan of $p failed"
done
for i in 1 2 3; do round off2 kplan plan p-off2 p-kplan p-plan; done
grep -v "no bitmap" d.log | tail -3
echo "kernel $(uname -r)"
