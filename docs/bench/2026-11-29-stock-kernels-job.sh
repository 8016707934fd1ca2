set -u
cd /var/tmp && rm -rf sk && mkdir sk && cd sk
stamp() { for f in "$@"; do pbitmap add -q "$f" 2>/dev/null; done; }
libs() { ldd "$1" | awk '/=> \//{print $3} /^\t\//{print $1}'; }
py=$(readlink -f /usr/bin/python3); gdb=$(readlink -f /usr/bin/gdb)
stamp "$py" $(libs "$py") "$gdb" $(libs "$gdb")
W1=("$py" -c "import json, email, http.client")
W2=("$gdb" -batch -ex "info version" /bin/true)
pbitmap record -- "${W1[@]}" >/dev/null 2>&1
pbitmap record -- "${W2[@]}" >/dev/null 2>&1
cold() { # name cond cmd...
  local n=$1 c=$2; shift 2
  sync; echo 3 > /proc/sys/vm/drop_caches
  read -r r0 _ < /sys/block/vda/stat
  if [ "$c" = run ]; then /usr/bin/time -f "%F %e" -o t pbitmap run -- "$@" >/dev/null 2>&1; else /usr/bin/time -f "%F %e" -o t "$@" >/dev/null 2>&1; fi
  read -r r1 _ < /sys/block/vda/stat
  echo "$n $c $(tail -n1 t) $((r1 - r0))"
}
for i in 1 2 3; do
  for c in plain run; do cold python3 $c "${W1[@]}"; cold gdb $c "${W2[@]}"; done
done
