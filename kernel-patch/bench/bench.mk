# kernel-patch/bench/bench.mk: the benchmark's host-side statistics and
# report (issue 12).  Included by the top Makefile.
#
#   make check-bench   unit tests of kernel-patch/bench/stats.py and a smoke
#                      test of kernel-patch/bench/report.py (tests/bench);
#                      CPU-light, no VM, no tool build
#
# The Python modules are Debian's; the scripts run /usr/bin/python3 so that
# another python3 first on PATH (pyenv) cannot hide them.

DEPS_BENCH := python3-numpy python3-scipy python3-matplotlib
DEPS_ALL += $(DEPS_BENCH)
CHECKS += check-bench

.PHONY: check-bench

check-bench:
	tests/run-tests tests/bench
