#!/bin/bash
# Guest job: the start-up plans the kernel learns for the programs of this
# image, one cold run each, in 64 KiB areas: how many bytes each plan uses.
set -u
W=/var/tmp/plan-sizes; rm -rf $W; mkdir -p $W; cd $W
printf 'int square(int x) { return x * x; }\n' > x.c
cmds=(
 "gdb -batch" "python3 -c pass" "emacs -batch --eval (kill-emacs)" "perl -e 1"
 "rpm -q rpm" "apt-get --version" "dpkg -s dpkg" "apt-cache policy" "strace -V" "file /bin/ls"
 "objdump -h /bin/ls" "readelf -h /bin/ls" "bash -c true" "ls /" "ps ax" "find /etc -maxdepth 1"
 "tar --version" "gzip -V" "xz -V" "sed --version" "grep -V" "awk --version" "mkfs.xfs -V"
 "mkfs.ext4 -V" "dmsetup version" "gcc -O2 -S x.c -o x.s" "as --version" "ld --version"
 "staprun -V" "apparmor_parser -V" "fsverity --version" "busybox true" "mount --version"
 "python3 -c import\ json,\ re,\ subprocess" "systemctl --version" "openssl version" "curl --version"
)
progs=()
for c in "${cmds[@]}"; do
	p=${c%% *}; p=$(command -v "$p" 2>/dev/null) || continue
	p=$(readlink -f "$p"); progs+=("$p")
done
# the programs gcc runs
progs+=("$(gcc -print-prog-name=cc1)")
printf '%s\n' "${progs[@]}" | sort -u > progs.txt
# stamp the programs (64 KiB areas) and every library they load
while read -r p; do pbitmap add -q --plan-size 64K "$p" 2>/dev/null; done < progs.txt
while read -r p; do ldd "$p" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'; done < progs.txt | sort -u |
	xargs -r readlink -f | sort -u | xargs -r pbitmap add -q 2>/dev/null
V=/proc/sys/vm
echo 1 > $V/pbitmap_enabled; echo 0 > $V/pbitmap_learn_interval_s; echo 1 > $V/pbitmap_learn
for c in "${cmds[@]}"; do
	sync; echo 3 > /proc/sys/vm/drop_caches
	eval "timeout 120 $c" > /dev/null 2>&1 < /dev/null
	echo 1 > $V/pbitmap_learn_flush
done
echo 0 > $V/pbitmap_learn
while read -r p; do
	line=$(pbitmap show "$p" 2>/dev/null | grep -E '^ +plan ' | head -1)
	echo "$p|$line"
done < progs.txt | tee "$RESULTS/plan-sizes.txt"
