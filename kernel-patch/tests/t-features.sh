#!/bin/bash
# The distribution features the pbitmap tests rely on are really in the
# guest, and the helpers of testbed-lib.sh work: two CPUs online, the cgroup
# v2 memory controller enforcing a limit, an overlayfs mount that runs a
# program from its lower layer, fs-verity on ext4, the IMA policy file with
# appraisal built in but not enforced, XFS with large folios in its page
# cache, transparent huge pages, an immutable file and a read-only bind
# mount.  Each check fails with a message naming what is missing.
set -euo pipefail
. ./testbed-lib.sh

ok() { echo "ok: $*"; }
config=$(zcat /proc/config.gz)
want_config() {
	grep -qx "CONFIG_$1=y" <<<"$config" || tb_fail "CONFIG_$1 is not set in the guest kernel"
}

# --- SMP: the runner's -smp 2 reached the kernel
online=$(cat /sys/devices/system/cpu/online)
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || tb_fail "$ncpu CPU online ($online); the runner asks for VM_SMP=${VM_SMP:-2}"
ok "$ncpu CPUs online ($online)"

# --- memory cgroup: a limit is enforced (an allocation above it is killed,
# one below it is not)
want_config MEMCG
tb_in_memcg 64M python3 -c 'b = bytearray(16 << 20); print(len(b))' >/dev/null ||
	tb_fail "16 MiB inside a 64 MiB memory cgroup failed"
[ "$TB_MEMCG_OOM" = 0 ] || tb_fail "16 MiB inside a 64 MiB memory cgroup was OOM-killed"
small_peak=$TB_MEMCG_PEAK
if tb_in_memcg 64M python3 -c 'b = bytearray(256 << 20); b[::4096] = b"x" * len(b[::4096])' \
	>/dev/null 2>&1; then
	tb_fail "256 MiB inside a 64 MiB memory cgroup succeeded: memory.max is not enforced"
fi
[ "$TB_MEMCG_OOM" -ge 1 ] || tb_fail "256 MiB inside a 64 MiB cgroup failed, but memory.events counts no oom_kill"
ok "memory cgroup v2: 16 MiB under memory.max=64M ran (usage at end $((small_peak >> 10)) KiB), 256 MiB was OOM-killed (oom_kill=$TB_MEMCG_OOM)"

# --- overlayfs: a program in the lower layer runs through the overlay; a
# write goes to the upper layer and leaves the lower one alone
want_config OVERLAY_FS
lower=$(tb_scratch)
cp /usr/bin/true "$lower/prog"
echo lower > "$lower/data"
merged=$(tb_overlay "$lower")
"$merged/prog" || tb_fail "a program in the overlay's lower layer does not run"
echo upper > "$merged/data"
[ "$(cat "$lower/data")" = lower ] || tb_fail "a write through the overlay changed the lower layer"
[ "$(cat "$merged/data")" = upper ] || tb_fail "the overlay does not show its upper layer"
ok "overlayfs: lower-layer program runs, copy-up on write ($merged)"

# --- fs-verity on the root ext4: enabled files measure and refuse writes
want_config FS_VERITY
d=$(tb_scratch)
head -c 1M /usr/bin/gdb > "$d/verity"
tb_verity "$d/verity"
if { echo x >> "$d/verity"; } 2>/dev/null; then
	tb_fail "a write to an fs-verity file succeeded"
fi
ok "fs-verity: $(fsverity measure "$d/verity" | cut -c1-30)..., writes refused"

# --- IMA: the policy file exists, appraisal is built in, and nothing is
# appraised unless a test loads a policy (no ima_appraise/ima_policy on the
# command line, empty policy)
want_config IMA
want_config IMA_APPRAISE
policy=/sys/kernel/security/ima/policy
[ -e "$policy" ] || tb_fail "no IMA policy file $policy (securityfs mounted by the runner?)"
if grep -qE 'ima_(appraise|policy)=' /proc/cmdline; then
	tb_fail "the kernel command line sets an IMA policy: $(cat /proc/cmdline)"
fi
rules=$(grep -c . "$policy" || true)
[ "$rules" = 0 ] || tb_fail "the IMA policy has $rules rules at boot; appraisal must be off by default"
ok "IMA: $policy present, appraisal built in, 0 rules at boot"

# --- XFS, the second local filesystem: a program runs from it, and a
# sequentially read file is cached in large folios (compound pages)
want_config XFS_FS
xfs=$(tb_xfs)
cp /usr/bin/true "$xfs/prog"
"$xfs/prog" || tb_fail "a program on XFS does not run"
head -c 8M /usr/lib/x86_64-linux-gnu/libLLVM-14.so.1 > "$xfs/big" 2>/dev/null ||
	head -c 8M /dev/urandom > "$xfs/big"
sync
echo 3 > /proc/sys/vm/drop_caches
large=$(python3 - "$xfs/big" "$PWD" <<'EOF'
# Count the file's cached pages that belong to a compound page (a folio
# larger than one page): map it, touch every page, look them up (pageflags.py).
import mmap, os, sys
sys.path.insert(0, sys.argv[2])
from pageflags import PAGE, compound_pages, map_address
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
with open(sys.argv[1], "rb") as f:	# sequential read(): readahead grows the folio order
	while f.read(1 << 20):
		pass
m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
for off in range(0, size, PAGE):
	m[off]
print(compound_pages(map_address(sys.argv[1]), range(size // PAGE)))
EOF
) || tb_fail "could not read the page flags of an XFS file"
[ "$large" -gt 0 ] || tb_fail "no page of an 8 MiB file read sequentially on XFS is in a large folio"
ok "XFS: program runs; $large of 2048 cached pages of a sequentially read file are in large folios"

# --- transparent huge pages
want_config TRANSPARENT_HUGEPAGE
thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled) || tb_fail "no THP sysfs"
ok "THP: enabled = $thp"

# --- an immutable file refuses writes; a read-only bind mount refuses them
d=$(tb_scratch)
echo data > "$d/file"
tb_immutable "$d/file"
if { echo x >> "$d/file"; } 2>/dev/null; then tb_fail "a write to an immutable file succeeded"; fi
ro=$(tb_ro_bind "$d")
if touch "$ro/new" 2>/dev/null; then tb_fail "a write on a read-only bind mount succeeded"; fi
grep -q " $ro .*\bro\b" /proc/mounts || tb_fail "$ro is not listed read-only in /proc/mounts"
ok "immutable file and read-only bind mount refuse writes"

# --- tb_wait checks every process, not only the last
(exit 3) & p1=$!
true & p2=$!
if tb_wait "$p1" "$p2" >/dev/null; then tb_fail "tb_wait missed the failure of the first process"; fi
true & p1=$!
true & p2=$!
tb_wait "$p1" "$p2" || tb_fail "tb_wait failed on two successful processes"
ok "tb_wait reports a failure of any process"

# --- tb_cleanup undoes what the helpers did: the mounts above are there
# now and gone after it
grep -q " $merged overlay " /proc/mounts || tb_fail "the overlay mount vanished early"
tb_cleanup
trap - EXIT
if grep -qE " ($merged|$xfs|$ro) " /proc/mounts; then
	tb_fail "tb_cleanup left mounts behind: $(grep -E " ($merged|$xfs|$ro) " /proc/mounts)"
fi
ok "tb_cleanup unmounted the overlay, the XFS scratch and the bind mount"
