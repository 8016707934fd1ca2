# kernel-patch/bench/bench.mk: the benchmark (issue 12).  Included by the top
# Makefile.
#
#   make bench         every condition side by side, cold starts in a booted
#                      guest, one boot per disk model (bench-run.sh); writes
#                      build/bench/results.csv, exec.csv, BENCH-table.md and
#                      plots/.  Overrides: RUNS= (10) GCC_RUNS= (3)
#                      LEARN_RUNS= (3) WORKLOADS= CONDITIONS= DISK= (iops150
#                      ebs latency none; also bytes150 ebs-opt) DELAY_MS= (4)
#                      EXEC_BENCH= (1) WAITS= (1: stap/waits.stp after the
#                      timed runs, waits.csv) BENCH_KERNEL= (patched;
#                      stock-6.12, stock-7.3: Debian's kernels as they ship,
#                      the conditions that need nothing of the series, such
#                      as off and daemon; host: the same conditions on this
#                      machine's own kernel and CPU, no guest)
#   make bench-report  the tables and plots again, from the CSV alone
#   make check-bench   unit tests of stats.py, floor.py, packlookup, report.py,
#                      power.py, rq-by-task.py
#                      and a smoke run of the harness in the guest (one
#                      workload, two conditions, two runs): tests/bench
#
# The Python modules are Debian's; the scripts run /usr/bin/python3 so that
# another python3 first on PATH (pyenv) cannot hide them.

DEPS_BENCH := python3-numpy python3-scipy python3-matplotlib nbdkit git
DEPS_ALL += $(DEPS_BENCH)
CHECKS += check-bench

-include kernel-patch/bench/parts.mk

BENCH_OUT := $(BUILD)/bench
BENCH_ENV = KERNEL=$(BZIMAGE) KBUILD=$(KOUT) IMAGE=$(GUEST_IMG)
BENCH_KERNEL ?= patched
# The kernel booted for the runs: the series' is built anyway (make check).
BENCH_STOCK = $(if $(filter stock-6.12,$(BENCH_KERNEL)),stock-kernel) \
	      $(if $(filter stock-7.3,$(BENCH_KERNEL)),stock-kernel-7.3)

.PHONY: bench bench-report check-bench

# WAITS=1 (the default): the wait attribution pass, stap/waits.stp.
WAITS ?= 1

bench: kernel image $(BUILD)/pbitmap $(BUILD)/pbitmapd $(BUILD)/pbitmap-audit.so $(BENCH_SCHED_I) $(BENCH_PACK) $(BENCH_PACKLOOKUP) $(BENCH_STOCK)
	$(if $(filter 1,$(WAITS)),$(if $(filter patched,$(BENCH_KERNEL)),@$(MAKE) --no-print-directory stap))
	$(BENCH_ENV) BENCH_KERNEL=$(BENCH_KERNEL) STOCK_DIR=$(abspath $(STOCK_DIR)) STOCK73_DIR=$(abspath $(STOCK73_DIR)) \
		PBITMAPD=$(abspath $(BUILD)/pbitmapd) WAITS=$(WAITS) WAITS_KO=$(abspath $(call stap_mod,waits)) kernel-patch/bench/bench-run.sh $(BENCH_OUT) $(BENCH_SCHED_I) \
		$(dir $(BENCH_PACK)) $(BENCH_PACKLOOKUP)

bench-report:
	/usr/bin/python3 kernel-patch/bench/report.py $(BENCH_OUT)/results.csv \
		-o $(BENCH_OUT)/BENCH-table.md --plots $(BENCH_OUT)/plots

# stap as a prerequisite, not a make of its own: under make check's -j a
# second make would build the same modules at the same time.
check-bench: kernel stap image $(BUILD)/pbitmap $(BUILD)/pbitmapd $(BUILD)/pbitmap-audit.so $(BENCH_PACKLOOKUP)
	$(BENCH_ENV) PBITMAPD=$(abspath $(BUILD)/pbitmapd) WAITS_KO=$(abspath $(call stap_mod,waits)) tests/run-tests tests/bench
