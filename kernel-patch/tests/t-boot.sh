#!/bin/bash
# The guest runs the kernel built by `make kernel` (its kernelrelease is the
# one in the build directory), has the tools the issue asks for, and the
# project's pbitmap runs.
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }

echo "uname -r: $(uname -r); host build: $PBITMAP_HOST_KERNELRELEASE"
[ "$(uname -r)" = "$PBITMAP_HOST_KERNELRELEASE" ] ||
	fail "guest kernel $(uname -r) is not the built one ($PBITMAP_HOST_KERNELRELEASE)"
[ "$(id -u)" = 0 ] || fail "not root"

pbitmap --version || fail "pbitmap --version"
for t in gcc gdb python3 emacs mount poweroff /usr/bin/time ps busybox getfattr; do
	command -v "$t" >/dev/null || fail "$t missing in the guest"
done
# The root disk is virtio and ext4, the configuration the measurements need.
grep -q '^/dev/root / ext4 \|^/dev/vda / ext4 ' /proc/mounts || fail "root is not ext4 on vda: $(grep ' / ' /proc/mounts)"
[ -r /sys/block/vda/stat ] || fail "no /sys/block/vda/stat"
# The options systemtap needs are in the running kernel.
config=$(zcat /proc/config.gz)
for o in KPROBES KRETPROBES RELAY DEBUG_FS KALLSYMS_ALL TRACEPOINTS PERF_EVENTS; do
	grep -qx "CONFIG_$o=y" <<<"$config" || fail "CONFIG_$o not set in the guest kernel"
done
echo "ok"
