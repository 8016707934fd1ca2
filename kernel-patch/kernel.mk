# kernel-patch/kernel.mk: the kernel test bed (issue 3, section 1).
# Included by the top Makefile; paths are relative to the repository root.
#
#   make kernel [KASAN=1]     patched 6.12 kernel -> build/kbuild[-kasan]/arch/x86/boot/bzImage
#   make kernel BPF=1         the same with BPF and BTF, for pbitmapd's learning in
#                             the benchmark -> build/kbuild-bpf (config-bpf.fragment)
#   make kernel-series-check  build the series patch by patch (W=1, warnings as
#                             errors): every patch compiles on its own; not
#                             part of make check
#   make kernel-patch-check   series format, checkpatch --strict, UAPI header identity
#   make kernel-distro-check  the objects the series touches, under Debian's own
#                             configuration, W=1 and sparse, warnings as errors
#   make image                build/guest.img, the Debian bookworm guest (ext4)
#   make vm-run CMD='...'     boot the guest, run CMD as root, its output and exit status
#   make vm-check             boot the guest and run kernel-patch/tests/t-*.sh,
#                             in VM_SHARDS guests at once (default 3); then the
#                             LSM tests in a guest of their own and the stock
#                             tests on Debian's own kernel (make stock-kernel)
#   make stock-kernel         Debian's linux-image of BASE's version, unpacked,
#                             with an initramfs -> build/stock/{vmlinuz,initrd.img}
#   make stock-kernel-7.3     Debian 13's backport of mainline 7.3, the same way
#                             -> build/stock-7.3/ (make bench BENCH_KERNEL=stock-7.3)
#   make vm-bpf-check         boot the kernel of BPF=1 and run kernel-patch/tests/bpf/
#                             t-*.sh: pbitmapd learning beside the learning kernel;
#                             not part of make check (a second kernel build)
#   make vm-debug-check       build the debug kernel (KASAN=1: KASAN, lockdep,
#                             kmemleak, fault injection, soft-lockup detector)
#                             and run kernel-patch/tests/debug/t-*.sh and
#                             $(VM_DEBUG_TESTS) on it; not part of make check
#
# Variables: KASAN=1 (use the KASAN kernel), IOPS (disk throttle, default
# 150), VM_TIMEOUT (seconds, default 3600), VM_MEM (default 2G), VM_SMP
# (virtual CPUs, default 2, multi-threaded TCG).

DEPS_KERNEL := bc flex bison libssl-dev libelf-dev \
	       dwarves ccache quilt rsync mmdebstrap qemu-system-x86 e2fsprogs sparse \
	       kmod cpio xz-utils busybox-static
DEPS_ALL += $(DEPS_KERNEL)
CHECKS += kernel-distro-check vm-check vm-lsm-check vm-stock-check

KP_DIR     := kernel-patch
KSRC       := $(BUILD)/linux-src
KSRC_STAMP := $(BUILD)/linux-src.stamp
KPATCHES   := $(KP_DIR)/BASE $(KP_DIR)/series \
	      $(addprefix $(KP_DIR)/,$(shell sed -e 's/\#.*//' $(KP_DIR)/series 2>/dev/null))
KFRAGS     := $(KP_DIR)/config.fragment
ifeq ($(KASAN),1)
KOUT       := $(BUILD)/kbuild-kasan
KFRAGS     += $(KP_DIR)/config-kasan.fragment
else ifeq ($(BPF),1)
KOUT       := $(BUILD)/kbuild-bpf
KFRAGS     += $(KP_DIR)/config-bpf.fragment
else
KOUT       := $(BUILD)/kbuild
endif
KJOBS      ?= 2
# The compiler cache lives outside the clone (PBITMAP_CACHE_DIR), so that
# a later clone at the same path on the same machine finds it (CI's clean
# clones); a fresh machine still builds everything.  Not across paths:
# with CCACHE_NOHASHDIR a clone elsewhere hit too (the kernel built in
# 169 s instead of 730 s), but its objects' DW_AT_comp_dir then named the
# other clone, where systemtap looked for the kernel's trace headers and
# found none.  Depend mode (CCACHE_DEPEND): a miss costs one compile, as
# without ccache, where the default mode runs the preprocessor once more to
# hash its output (fs/xfs/ and drivers/acpi/, 314 objects of this
# configuration, from an empty cache on a 2-core host: 200 s by default,
# 145 s in depend mode, 147 s without ccache; kbuild passes -Wp,-MMD, which
# depend mode needs, and a rebuild hits as before).  make check from a clean
# machine is all misses.
PBITMAP_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/pbitmap
KCCACHE    := $(PBITMAP_CACHE_DIR)/ccache
KCCACHE_ENV = CCACHE_DIR=$(KCCACHE) CCACHE_MAXSIZE=8G CCACHE_DEPEND=1
# A reproducible link (Documentation/kbuild/reproducible-builds.rst): the
# version string's build number, user, host and time fixed, the time that of
# the last commit that changed the series or the configuration.  Linking the
# same objects again then gives the same vmlinux and build-id, and systemtap
# modules built against the first link still load into the second (make
# check of 5042886 failed on "Build-id mismatch" in the systemtap guest;
# how that run came to link twice is not known).  Two links of the same
# tree gave ce7e6959... both times here; without these, each link has its
# own.  KBUILD_BUILD_TIMESTAMP also makes pahole's BTF reproducible (none
# in this configuration).
KBUILD_REPRO = KBUILD_BUILD_VERSION=1 KBUILD_BUILD_USER=pbitmap KBUILD_BUILD_HOST=test-bed \
	KBUILD_BUILD_TIMESTAMP='$(KBUILD_DATE)'
# (Outside a git checkout, a fixed date: a variable, since $(or) would cut
# a literal at its first comma.)
KBUILD_DATE_NO_GIT := Thu, 1 Jan 2026 00:00:00 +0000
KBUILD_DATE := $(or $(shell git log -1 --format=%cD -- $(KPATCHES) $(KFRAGS) 2>/dev/null),$(KBUILD_DATE_NO_GIT))
KMAKE      = $(KCCACHE_ENV) $(MAKE) -C $(KSRC) O=$(abspath $(KOUT)) \
	     CC="ccache gcc" HOSTCC="ccache gcc" $(KBUILD_REPRO)
BZIMAGE    := $(KOUT)/arch/x86/boot/bzImage
GUEST_IMG  := $(BUILD)/guest.img

.PHONY: kernel kernel-patch-check kernel-distro-check kernel-tree kernel-base-check \
	kernel-series-check \
	image vm-run vm-check vm-debug-check vm-debug-run vm-bpf-check vm-bpf-run stock-kernel \
	stock-kernel-7.3 toolbuilds vm-lsm-check

# The linux-source and linux-config packages must be the version the series
# was made against (kernel-patch/BASE), not whatever the archive has now:
# they are installed at that version here, not by make deps.  When the
# archive no longer has it (Debian's security archive keeps a few
# versions), this stops and says so; see kernel-patch/README.md.  Checked on
# every run: the packages can change without any file here changing.
kernel-base-check: deps
	@$(KP_DIR)/scripts/install-base

# Fresh extraction + quilt push -a whenever BASE, the series or a patch changes.
$(KSRC_STAMP): $(KPATCHES) $(KP_DIR)/scripts/prepare-tree | kernel-base-check
	@mkdir -p $(BUILD)
	$(KP_DIR)/scripts/prepare-tree $(KSRC)
	@touch $@

kernel-tree: kernel-base-check $(KSRC_STAMP)

kernel-patch-check: kernel-tree
	$(KP_DIR)/scripts/check-patches $(KSRC)

# What a distribution engineer builds first: the series under Debian's own
# amd64 configuration (package linux-config-6.12, BASE's version).  Only the
# objects the series touches, so it takes minutes, not a kernel build.
KDISTRO := $(BUILD)/kbuild-distro
kernel-distro-check: kernel-tree
	@mkdir -p $(KCCACHE)
	$(KCCACHE_ENV) DISTRO_CC="ccache gcc" DISTRO_HOSTCC="ccache gcc" KJOBS=$(KJOBS) \
		$(KP_DIR)/scripts/distro-check $(KSRC) $(KDISTRO)

# Every patch compiles on its own: kernel-patch/scripts/series-check.
KSERIES_SRC := $(BUILD)/linux-series
KSERIES_OUT := $(BUILD)/kbuild-series
kernel-series-check: kernel-base-check
	@mkdir -p $(KCCACHE)
	$(KCCACHE_ENV) SERIES_CC="ccache gcc" SERIES_HOSTCC="ccache gcc" KJOBS=$(KJOBS) \
		$(KP_DIR)/scripts/series-check $(KSERIES_SRC) $(KSERIES_OUT)

# tinyconfig + the fragment(s), then olddefconfig, then prove nothing was lost.
$(KOUT)/.config: $(KFRAGS) $(KSRC_STAMP) $(KP_DIR)/scripts/check-config
	@mkdir -p $(KOUT)
	$(KMAKE) -s tinyconfig
	cd $(KSRC) && scripts/kconfig/merge_config.sh -m -O $(abspath $(KOUT)) \
		$(abspath $(KOUT))/.config $(abspath $(KFRAGS)) >/dev/null
	$(KMAKE) -s olddefconfig
	$(KP_DIR)/scripts/check-config $@ $(KFRAGS)

# kbuild decides what to rebuild; this recipe always runs it.
#
# piggy.o embeds the compressed kernel with .incbin, which ccache's depend
# mode does not hash (the file is in no dependency list): when piggy.S is
# the same text (a change that keeps vmlinux's size and its compressed
# size, such as one sysctl's default) ccache hands back the old piggy.o,
# and bzImage boots the kernel before the change.  It happened here
# (2026-12-06: the series' vmlinux had vm.pbitmap_plan_meta 1, its bzImage
# -1), so piggy.o is assembled again without ccache every time (seconds).
kernel: kernel-base-check kernel-patch-check $(KOUT)/.config
	@mkdir -p $(KCCACHE)
	$(KMAKE) -j$(KJOBS) all
	rm -f $(KOUT)/arch/x86/boot/compressed/piggy.o
	CCACHE_DISABLE=1 $(KMAKE) -j$(KJOBS) bzImage
	@objcopy -O binary --only-section=.rodata..compressed $(KOUT)/arch/x86/boot/compressed/piggy.o \
		$(KOUT)/piggy-payload && \
		cmp -s $(KOUT)/piggy-payload $(KOUT)/arch/x86/boot/compressed/vmlinux.bin.gz || \
		{ echo "kernel: $(BZIMAGE) does not hold this vmlinux (piggy.o)" >&2; exit 1; }
	@echo "kernel: $(BZIMAGE) ($$($(KMAKE) -s --no-print-directory kernelrelease))"

# ---------------------------------------------------------------- guest image
$(GUEST_IMG): $(KP_DIR)/scripts/make-image $(BUILD)/pbitmap | deps
	$(KP_DIR)/scripts/make-image $(BUILD)/pbitmap $@

image: $(GUEST_IMG)

# ---------------------------------------------------------------- VM runner
VM := $(KP_DIR)/scripts/vm
VM_ENV = KERNEL=$(BZIMAGE) KBUILD=$(KOUT) IMAGE=$(GUEST_IMG)

# CMD is used as typed: $(value CMD), single-quoted for the shell, so that
# make expands none of its $ signs.  Make's own exit status is 0 or 2; the
# runner prints the job's status, and scripts/vm --cmd exits with it exactly.
unexport CMD
VM_CMD_Q = '$(subst ','\'',$(value CMD))'

vm-run:
	@test -n $(VM_CMD_Q) || { echo "usage: make vm-run CMD='...'" >&2; exit 2; }
	@test -f $(BZIMAGE) -a -f $(GUEST_IMG) || $(MAKE) kernel image >&2
	@$(VM_ENV) $(VM) --cmd $(VM_CMD_Q)

# Builds what is out of date first (a no-op kernel build takes about 10 s).
# The tests travel with tests/lib/ground_truth.py, which measures the pages a
# command faults (the tests stamp their bitmaps from it), and with two builds
# of this project's tool, packaged with pbitmap's own .rpm and .deb
# (tests/lib/make-toolbuilds), for t-upgrade.
VM_TESTS := $(BUILD)/vm-tests
# Guests at once (scripts/vm-shards): the tests are mostly single-threaded,
# so two guests use both cores of a 2-core host.  Three: the tests also wait
# on their throttled disks (150 requests a second), and with two guests the
# host's cores were 16-19% idle in the last 600 s of make check of 36927f6
# (vmstat), when the systemtap and benchmark guests had ended; the shards
# ended 1180 and 1190 s after they started.  (Three were no faster when
# the shards ended before those guests: 718-761 s against 797-805 s with
# two, and those guests then ended after them.)  With three (0738fb6) the
# shards ended 1068-1300 s after they started and make check took 2443 s.
# Four were slower (2026-12-08).  The three guests of make check of e80bcf5
# from a clean clone used 547, 368 and 368 s of host CPU in 1157, 1007 and
# 910 s, 1.1 cores of 2; but the guests' phase of that run, repeated with
# four (make -j4 vm-check vm-lsm-check stap-check check-bench VM_SHARDS=4,
# kernel built) took 1297 s against 1159, the four guests 1085-1221 s and
# 1557 s of host CPU against 1283 for the same tests, and a warm make
# check took 1465 s against 1213 with three.  The same phase with three
# and the table of that run (vm-shards): 1164 s, the guests 937-1100 s.
VM_SHARDS ?= 3
# The tests that need LSMs the other boots leave off (config.fragment): one
# guest of their own (vm-lsm-check), booted with VM_LSM_APPEND, in its own
# job directory and lock: under make check it runs beside the shards, not
# after them on one core of two.
VM_LSM_TESTS  := t-learn-lsm
VM_LSM_APPEND := lsm=landlock,tomoyo,apparmor
VM_LSM_DIR    := $(BUILD)/vm-lsm-tests
# The tests of what runs without the patch: a guest of their own
# (vm-stock-check, below), booted from Debian's own kernel as it ships (issue 45).
STOCK_DIR       := $(BUILD)/stock
VM_STOCK_TESTS  := t-stock-run t-daemon t-daemon-hold t-daemon-learn t-daemon-learn-btrfs t-daemon-learn-plan t-daemon-learn-swap t-daemon-learn-partial t-daemon-meta t-device-gap
VM_STOCK_DIR    := $(BUILD)/vm-stock-tests
stock-kernel: deps
	$(KP_DIR)/scripts/stock-kernel $(STOCK_DIR)
# Mainline 7.3 as Debian 13 backports it: the benchmark's (BENCH_KERNEL=stock-7.3).
STOCK73_DIR     := $(BUILD)/stock-7.3
stock-kernel-7.3: deps
	$(KP_DIR)/scripts/stock-kernel --mainline $(STOCK73_DIR)
# t-upgrade's tool builds and packages need no kernel: their own target, so
# that make check makes them beside the kernel build (about 2 minutes of
# compiles and rpmbuild runs that came after it, before any guest started).
TOOLBUILDS := $(BUILD)/toolbuilds
toolbuilds: rpm deb $(BUILD)/pbitmap
	rm -rf $(TOOLBUILDS)
	tests/lib/make-toolbuilds $(abspath $(TOOLBUILDS))
vm-lsm-check: kernel image
	@rm -rf $(VM_LSM_DIR) && mkdir -p $(VM_LSM_DIR)
	cp -a $(filter-out $(KP_DIR)/tests/t-%.sh $(KP_DIR)/tests/debug $(KP_DIR)/tests/bpf,$(wildcard $(KP_DIR)/tests/*)) \
		$(patsubst %,$(KP_DIR)/tests/%.sh,$(VM_LSM_TESTS)) $(VM_LSM_DIR)/
	VM_APPEND="$(VM_LSM_APPEND) $${VM_APPEND:-}" VM_JOBDIR=$(BUILD)/vm-lsm/job \
		VM_RESULTS=$(BUILD)/vm-lsm-results VM_CONSOLE=$(BUILD)/vm-lsm-console.log \
		$(VM_ENV) $(VM) --tests $(VM_LSM_DIR)
vm-check: kernel image rpm deb toolbuilds $(BUILD)/pbitmapd
	@rm -rf $(VM_TESTS) && mkdir -p $(VM_TESTS)
	cp -a $(KP_DIR)/tests/. tests/lib/ground_truth.py tests/lib/jaccard.py tests/lib/resident.py tests/lib/pagecache.py \
		$(BUILD)/pbitmapd $(VM_TESTS)/
	rm -f $(patsubst %,$(VM_TESTS)/%.sh,$(VM_LSM_TESTS) $(VM_STOCK_TESTS))
	cp -a $(TOOLBUILDS) $(VM_TESTS)/toolbuilds
	mkdir -p $(VM_TESTS)/modules
	cp $(KOUT)/lib/kunit/kunit.ko $(KOUT)/mm/pbitmap/tests/pbitmap_kunit.ko $(VM_TESTS)/modules/
	VM_SHARDS_DIR=$(BUILD) $(VM_ENV) $(KP_DIR)/scripts/vm-shards $(VM_SHARDS) $(VM_TESTS)

# The stock kernel's guest needs neither the patched kernel nor its
# guests: under make check it runs beside the kernel build, in its own job
# directory (and lock), instead of after every other guest, where it kept
# one core of two busy for 7 minutes (make check of 5f82d5a from an empty
# compiler cache: the build phase 23 minutes, the shards 20, then this
# guest alone, 415 s; 0ac7013: 643 s beside the build, which it made 70 s
# longer, and the whole run 2559 s against 3035).
VM_STOCK_JOB := $(BUILD)/vm-stock/job
vm-stock-check: image stock-kernel $(BUILD)/pbitmapd
	@rm -rf $(VM_STOCK_DIR) && mkdir -p $(VM_STOCK_DIR)
	cp -a $(filter-out $(KP_DIR)/tests/t-%.sh $(KP_DIR)/tests/debug $(KP_DIR)/tests/bpf,$(wildcard $(KP_DIR)/tests/*)) \
		$(patsubst %,$(KP_DIR)/tests/%.sh,$(VM_STOCK_TESTS)) $(BUILD)/pbitmapd tests/lib/resident.py \
		$(VM_STOCK_DIR)/
	cp -a $(STOCK_DIR)/test-modules $(VM_STOCK_DIR)/modules
	# single-threaded TCG: pbitmapd attaches and detaches its BPF programs
	# (fentry on handle_mm_fault) at every start and stop, and the kernel
	# patches that text with int3 while the other vCPU runs it; under
	# multi-threaded TCG a vCPU once ran a stale translation of it and
	# oopsed ("Oops: int3" at handle_mm_fault+0x5; CI of 1757b6e)
	$(VM_ENV) VM_TCG_THREAD=single KERNEL=$(STOCK_DIR)/vmlinuz INITRD=$(STOCK_DIR)/initrd.img \
		VM_RELEASE=$$(cat $(STOCK_DIR)/release) VM_JOBDIR=$(VM_STOCK_JOB) VM_RESULTS=$(BUILD)/vm-stock-results \
		VM_CONSOLE=$(BUILD)/vm-stock-console.log $(VM) --tests $(VM_STOCK_DIR)

# The debug suite: the tests that need the debug kernel (kernel-patch/tests/
# debug/), and those of make check whose code paths are worth KASAN,
# lockdep and the soft-lockup detector (t-record-4m checks the latter only
# where the kernel has it).  Everything the tests source comes along.
# acpi=noirq: on a slow host the KASAN kernel's ACPI interpreter runs into
# AE_AML_LOOP_TIMEOUT evaluating the PCI routing table (_PRT), virtio gets
# no interrupt and the boot hangs at the root disk; the guest's devices
# then take the interrupt lines the firmware (SeaBIOS) assigned instead.
VM_DEBUG_TESTS := t-kunit t-join-cached t-crafted t-learn t-learn-rules t-learn-crash t-cache-share t-cache-attacker t-record-4m \
		  t-crafted-mmap t-learn-vma-lock \
		  t-memcg-prefetch t-learn-storm t-plan t-plan-order t-plan-pace t-plan-later t-plan-meta t-plan-meta-interp t-crafted-plan t-plan-cost t-learn-verity t-plan-audit t-plan-wait t-learn-share \
		  t-learn-lsm
VM_DEBUG_DIR := $(BUILD)/vm-debug-tests
vm-debug-check:
	$(MAKE) KASAN=1 vm-debug-run
vm-debug-run: kernel image
	@test "$(KASAN)" = 1 || { echo "vm-debug-run: use make vm-debug-check" >&2; exit 2; }
	@rm -rf $(VM_DEBUG_DIR) && mkdir -p $(VM_DEBUG_DIR)/modules
	cp -a $(filter-out $(KP_DIR)/tests/t-%.sh $(KP_DIR)/tests/debug $(KP_DIR)/tests/bpf,$(wildcard $(KP_DIR)/tests/*)) \
		tests/lib/ground_truth.py tests/lib/jaccard.py tests/lib/resident.py tests/lib/pagecache.py $(VM_DEBUG_DIR)/
	cp $(KP_DIR)/tests/debug/t-*.sh $(patsubst %,$(KP_DIR)/tests/%.sh,$(VM_DEBUG_TESTS)) $(VM_DEBUG_DIR)/
	cp $(KOUT)/lib/kunit/kunit.ko $(KOUT)/mm/pbitmap/tests/pbitmap_kunit.ko $(VM_DEBUG_DIR)/modules/
	VM_TIMEOUT=$${VM_TIMEOUT:-5400} VM_APPEND="acpi=noirq $(VM_LSM_APPEND) $${VM_APPEND:-}" \
		VM_RESULTS=$(BUILD)/vm-debug-results \
		VM_CONSOLE=$(BUILD)/vm-debug-console.log $(VM_ENV) $(VM) --tests $(VM_DEBUG_DIR)

# pbitmapd beside the series' kernel where both learn (learn.c's meta-only
# learners): only the kernel of BPF=1 has the BPF, ftrace and BTF pbitmapd
# learns with.  Single-threaded TCG, as for the stock guest (fentry text
# patched while the other vCPU runs it).
VM_BPF_DIR := $(BUILD)/vm-bpf-tests
vm-bpf-check:
	$(MAKE) BPF=1 vm-bpf-run
vm-bpf-run: kernel image $(BUILD)/pbitmapd
	@test "$(BPF)" = 1 || { echo "vm-bpf-run: use make vm-bpf-check" >&2; exit 2; }
	@rm -rf $(VM_BPF_DIR) && mkdir -p $(VM_BPF_DIR)
	cp -a $(filter-out $(KP_DIR)/tests/t-%.sh $(KP_DIR)/tests/debug $(KP_DIR)/tests/bpf,$(wildcard $(KP_DIR)/tests/*)) \
		$(KP_DIR)/tests/bpf/t-*.sh $(BUILD)/pbitmapd $(VM_BPF_DIR)/
	VM_TCG_THREAD=single VM_JOBDIR=$(BUILD)/vm-bpf/job VM_RESULTS=$(BUILD)/vm-bpf-results \
		VM_CONSOLE=$(BUILD)/vm-bpf-console.log $(VM_ENV) $(VM) --tests $(VM_BPF_DIR)

# The benchmark's gcc input: kernel/sched/core.c preprocessed from the
# test-bed tree (make bench, kernel-patch/bench/bench.mk).
BENCH_SCHED_I := $(BUILD)/bench/sched.i
$(BENCH_SCHED_I): $(KOUT)/.config $(KSRC_STAMP)
	@mkdir -p $(dir $@)
	$(KMAKE) -s kernel/sched/core.i
	cp $(KOUT)/kernel/sched/core.i $@
