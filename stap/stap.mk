# stap/stap.mk: systemtap measurements in the test-bed VM (issue 4).
# Included by the top Makefile after kernel-patch/kernel.mk, whose kernel
# build tree (KOUT), image and VM runner it uses.
#
#   make stap                  compile stap/*.stp into build/stap/*.ko (host)
#   make stap-run SCRIPT=faults CMD='...' [STAP_ARGS='progs=cc1'] [COLD=0]
#                              boot the VM, run CMD under the script, print both
#   make stap-check            the guest checks in stap/tests (part of make check)
#   make stap-demo             cold start off/on/plan: faults table and fault-map PNG
#
# Modules are built against the project's kernel build tree with Debian's
# systemtap 4.8, whose runtime needs fixes for kernels newer than it
# (stap/runtime-*.patch, applied to a copy under build/stap/runtime; each
# says which kernel change it follows).  The stap cache lives in
# build/stap/cache.

DEPS_STAP := systemtap python3-matplotlib
DEPS_ALL += $(DEPS_STAP)
CHECKS += stap-check

STAP_DIR     := stap
# Modules match one kernel build: KASAN=1 gets its own directory.
STAP_BUILD   := $(BUILD)/stap$(if $(filter 1,$(KASAN)),-kasan)
STAP_SCRIPTS := faults pbitmap fault-map learn waits
# staprun takes the module name from the file name, and module names are C
# identifiers: fault-map.stp -> build/stap/stap_fault_map.ko.
stap_mod      = $(STAP_BUILD)/stap_$(subst -,_,$(1)).ko
STAP_MODS    := $(foreach s,$(STAP_SCRIPTS),$(call stap_mod,$(s)))
STAP_RUNTIME := $(STAP_BUILD)/runtime
# In this order.  The first needs STAP_DEFS' -DSTP_TASK_WORK_CANCEL_FUNC
# (6.1.192 has the 6.11 change too); the others are guarded in the C (kernel
# version, __has_include, macro tests) or equivalent on 6.1.
STAP_RT_FIXES := $(patsubst %,$(STAP_DIR)/runtime-%.patch,task-work-cancel-func \
	module-memory kallsyms-on-each-symbol gup-remote-vma for-each-process-thread \
	autoconf-utrace-folio strlcpy vmalloc-macros linux-unaligned flush-scheduled-work \
	uprobe-unregister)
STAP_SYSRT   := /usr/share/systemtap/runtime

# The fix is needed exactly when the kernel has task_work_cancel_func().
# Systemtap aborts a module whose probes take more than half of a CPU's
# cycles over a second (STP_OVERLOAD_*), a guard for real machines.  The
# modules built here run only in the test bed's TCG guests, where that
# guard measures the host, not the probes: every probe runs 10-30x slower
# than the program it watches, and a vCPU's time stolen by a loaded host
# counts as probe time.  fault-map's probe once took 50.4% (CI of 879280d),
# and with the threshold raised to 90%, waits.stp in the benchmark's smoke
# run was aborted at 118% of a second (CI of ee28dea): more than all of
# the cycles, which only a stalled vCPU explains.  So the guard is off
# (STP_NO_OVERLOAD); a runaway probe still fails the test that loads it, by
# that test's time limit.  `stap` run by a user keeps systemtap's default.
STAP_DEFS = -DMAXMAPENTRIES=16384 -DSTP_NO_OVERLOAD \
	$(if $(shell grep -s -l 'task_work_cancel_func' $(KSRC)/include/linux/task_work.h),-DSTP_TASK_WORK_CANCEL_FUNC)
# Kbuild options (stap -B).  6.12 compiles modules with -Wextra,
# -Wmissing-prototypes, -Wmissing-declarations, -Wenum-conversion and
# -Wrestrict, which
# 6.1 did not; the C that 4.8's translator generates and its autoconf tests
# trip them, and stap adds -Werror: KCFLAGS turns them back off (no-ops on
# 6.1).  6.12's <linux/args.h> defines COUNT_ARGS(), which 4.8's tracepoint
# query modules define again differently; a redefinition has no -Wno- switch,
# so -Werror is dropped for those query modules only (a failed query module
# makes its tracepoints "no match").  6.12's objtool also warns "data
# relocation to !ENDBR" for each .eh_frame entry of a function without ENDBR
# (stap's -fasynchronous-unwind-tables): harmless, and kept on purpose:
# without those references objtool would seal the ENDBR of functions only
# called indirectly (init_module, the tracepoint handlers), which a CPU that
# enforces IBT would then refuse to call.
STAP_KBUILD = -B 'KCFLAGS=-Wno-extra -Wno-missing-prototypes -Wno-missing-declarations -Wno-enum-conversion -Wno-restrict' \
	      -B 'ccflags-remove-y=$$(if $$(findstring tracequery,$$(obj)),-Werror)'
# systemtap reads the build host's /sys/kernel/security/lockdown and, on a
# machine in lockdown (Secure Boot), will only build modules it can sign
# with an enrolled machine owner key: "Failed to get list of machine owner
# keys (MOK)".  These modules load in the test bed's guests, whose kernels
# are not locked down, so on such a host stap runs in a mount namespace of
# its own without securityfs (a private umount; the host keeps its mount).
STAP_HOST_LOCKED := $(shell grep -s -v -F '[none]' /sys/kernel/security/lockdown)
STAP_UNLOCKED = $(if $(STAP_HOST_LOCKED),unshare -m sh -c 'umount -l /sys/kernel/security; exec "$$@"' stap-build)
STAP_CMD = SYSTEMTAP_DIR=$(abspath $(STAP_BUILD)/cache) $(STAP_UNLOCKED) stap -r $(abspath $(KOUT)) \
	   -R $(abspath $(STAP_RUNTIME)) $(STAP_DEFS) $(STAP_KBUILD)

.PHONY: stap stap-run stap-check stap-demo

# Recopied when a fix or the installed systemtap changes.
$(STAP_RUNTIME)/.patched: $(STAP_RT_FIXES) $(wildcard $(STAP_SYSRT)/stp_task_work.c) | deps
	@rm -rf $(STAP_RUNTIME) && mkdir -p $(STAP_BUILD)
	cp -a $(STAP_SYSRT) $(STAP_RUNTIME)
	for p in $(STAP_RT_FIXES); do \
		patch -s -d $(STAP_RUNTIME) -p1 --fuzz=0 --no-backup-if-mismatch < $$p || exit 1; done
	@touch $@

# Beside each module, the build-id of the vmlinux it was built against
# (stap_SCRIPT.kernel-build-id): systemtap refuses to load a module into
# another link of the kernel ("Build-id mismatch"), and the guest side
# (build-id.sh, for make stap-check and the benchmark's WAITS=1) compares it
# with the running kernel's first, to say so with both ids.
stap_kid = $(patsubst %.ko,%.kernel-build-id,$(1))
define stap_rule
$(call stap_mod,$(1)): $(STAP_DIR)/$(1).stp $(STAP_DIR)/stap.mk $(STAP_RUNTIME)/.patched $(BZIMAGE)
	LC_ALL=C readelf -n $(KOUT)/vmlinux | sed -n 's/^ *Build ID: //p' > $$(call stap_kid,$$@).tmp
	@test -s $$(call stap_kid,$$@).tmp || { echo "stap: no build-id in $(KOUT)/vmlinux" >&2; exit 1; }
	cd $(STAP_BUILD) && $$(STAP_CMD) -p4 -m $$(basename $$(notdir $$@)) $$(abspath $$<) >/dev/null
	mv $$(call stap_kid,$$@).tmp $$(call stap_kid,$$@)
endef
$(foreach s,$(STAP_SCRIPTS),$(eval $(call stap_rule,$(s))))

stap: kernel
	@$(MAKE) --no-print-directory $(STAP_MODS)

# The guest's staprun must be the host's systemtap version; the job checks
# (by package version: staprun -V of 4.8 prints nothing).
STAP_VERSION = $(shell dpkg-query -W -f='$${Version}' systemtap 2>/dev/null)
STAP_JOB     := $(STAP_BUILD)/job

unexport SCRIPT STAP_ARGS COLD
stap-run:
	@test -n "$(SCRIPT)" -a -n $(VM_CMD_Q) || \
		{ echo "usage: make stap-run SCRIPT={$(subst $() ,|,$(STAP_SCRIPTS))} CMD='...' [STAP_ARGS='...'] [COLD=0]" >&2; exit 2; }
	@test -f $(STAP_DIR)/$(SCRIPT).stp || { echo "stap-run: no script stap/$(SCRIPT).stp" >&2; exit 2; }
	@$(MAKE) --no-print-directory stap image >&2
	@rm -rf $(STAP_JOB)/run && mkdir -p $(STAP_JOB)/run
	@printf '%s\n' '$(STAP_VERSION)' > $(STAP_JOB)/run/stap-version
	@printf '%s\n' $(VM_CMD_Q) > $(STAP_JOB)/run/cmd
	@printf '%s\n' '$(subst ','\'',$(value STAP_ARGS))' > $(STAP_JOB)/run/stap-args
	@printf '%s\n' '$(or $(COLD),1)' > $(STAP_JOB)/run/cold
	@cp $(call stap_mod,$(SCRIPT)) $(call stap_kid,$(call stap_mod,$(SCRIPT))) $(STAP_DIR)/guest-lib.sh $(STAP_DIR)/build-id.sh $(KP_DIR)/tests/gcc-workload.sh $(STAP_JOB)/run/
	@$(VM_ENV) $(VM) --job $(STAP_DIR)/guest-run $(STAP_JOB)/run/*

# The systemtap checks compare per-fault counts exactly, and run with one
# vCPU (STAP_VM_SMP): with two, one cold start in three lost almost all of
# cc1's faults in fault-map.stp ("skipped probes: 3"; faults.stp, on the
# same run, counted them all), as when two CPUs' probes contend for a
# script's global maps.  Until the scripts are made SMP-safe, their exact
# comparison runs where it can be exact; the kernel tests run with 2.
STAP_VM_SMP ?= 1

# Tests and modules travel together into the guest.  The guest has its own
# job directory, and so its own lock: under make check it runs beside the
# kernel tests' guests (make vm-check holds build/vm.lock).
STAP_VM := $(STAP_BUILD)/vm
stap-check: stap image
	@rm -rf $(STAP_JOB)/tests && mkdir -p $(STAP_JOB)/tests
	cp $(STAP_DIR)/tests/* $(STAP_DIR)/guest-lib.sh $(STAP_DIR)/build-id.sh $(KP_DIR)/tests/gcc-workload.sh $(KP_DIR)/tests/learn-pages.c \
		$(STAP_MODS) $(call stap_kid,$(STAP_MODS)) $(STAP_JOB)/tests/
	echo '$(STAP_VERSION)' > $(STAP_JOB)/tests/stap-version
	$(VM_ENV) VM_SMP=$(STAP_VM_SMP) VM_JOBDIR=$(STAP_VM)/job VM_RESULTS=$(STAP_VM)/results \
		VM_CONSOLE=$(STAP_VM)/console.log $(VM) --tests $(STAP_JOB)/tests

# make demo's part: the off/on/plan table and the fault maps drawn side by side.
STAP_PNG := $(STAP_BUILD)/fault-map-gcc.png
stap-demo: stap image
	@rm -rf $(STAP_JOB)/demo && mkdir -p $(STAP_JOB)/demo
	@echo '$(STAP_VERSION)' > $(STAP_JOB)/demo/stap-version
	$(VM_ENV) VM_SMP=$(STAP_VM_SMP) $(VM) --job $(STAP_DIR)/guest-demo $(STAP_DIR)/guest-lib.sh $(STAP_DIR)/build-id.sh \
		$(KP_DIR)/tests/gcc-workload.sh $(STAP_MODS) $(call stap_kid,$(STAP_MODS)) $(STAP_JOB)/demo/stap-version
	@cp $(BUILD)/vm-results/fault-map-off.txt $(BUILD)/vm-results/fault-map-on.txt \
		$(BUILD)/vm-results/fault-map-plan.txt $(STAP_BUILD)/
	$(STAP_DIR)/plot-fault-map -o $(STAP_PNG) --label 'pbitmap off' \
		--label 'per-file bitmaps (pbitmap record)' --label 'learned plan' \
		$(STAP_BUILD)/fault-map-off.txt $(STAP_BUILD)/fault-map-on.txt $(STAP_BUILD)/fault-map-plan.txt
