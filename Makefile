# pbitmap: predictive page bitmaps for Linux.  See README.md.
#
#   make deps     install the Debian packages the project needs (as root)
#   make          build build/pbitmap
#   make check    run every test
#   make demo     the end-to-end demonstration
#   make fuzz     a long fuzzing run of the parsers and of the writing verbs
#   make install  PREFIX=/usr DESTDIR=

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   := build
CC      := gcc
FUZZ_SECONDS ?= 600

TOOL_DIR := pbitmap-tool
SRCS     := $(sort $(wildcard $(TOOL_DIR)/src/*.c))
HDRS     := $(wildcard $(TOOL_DIR)/src/*.h) $(TOOL_DIR)/uapi/linux/pbitmap.h
FUZZ_HDRS := $(wildcard $(TOOL_DIR)/fuzz/*.h)

# -Werror only under `make check` (and so CI), which sets PBITMAP_WERROR=1:
# a newer compiler's new warnings must not stop someone building the tool.
PBITMAP_WERROR ?=
WARN     := -Wall -Wextra $(if $(filter 1,$(PBITMAP_WERROR)),-Werror) -Wshadow \
	    -Wstrict-prototypes -Wformat=2
CPPFLAGS := -D_GNU_SOURCE -I$(TOOL_DIR)/uapi -I$(TOOL_DIR)/src
CFLAGS   := -std=c11 -O2 -g $(WARN) -fstack-protector-strong -D_FORTIFY_SOURCE=2
# The tool and its launcher are static executables (STATIC below): their
# start-up maps no ld.so and no shared library, which a cold `pbitmap run`
# would read ahead of the program it starts.  Position-independent
# (-static-pie), so that ASLR still applies to a tool that package triggers
# run as root on files from packages.  Digests come from libmd
# (digest.c).  So the tool must not call dlopen() or glibc's NSS functions
# (getpwnam(), getaddrinfo() ...): they need the shared libc at run time,
# and the static link warns of them.  The sanitizer build and the fuzzers
# cannot be static: they link the same libraries dynamically.
LIBS     := -lelf -lzstd -lz -lmd
TOOL_LIBS := $(LIBS)
STATIC   := -static-pie
ASAN_LIBS := $(LIBS)
VERSION  := $(shell cat $(TOOL_DIR)/VERSION)
CPPFLAGS += -DPBITMAP_VERSION_STRING='"$(VERSION)"'

# The test build: AddressSanitizer, UBSan, and the crash-injection points.
SAN_CFLAGS := -std=c11 -O1 -g $(WARN) -fsanitize=address,undefined \
	      -fno-sanitize-recover=all -fno-omit-frame-pointer \
	      -DPBITMAP_FAULT_INJECTION

# Debian packages, grouped by what needs them (libssl-dev: the reference
# SHA-256 of fuzz_stamp, below; btrfs-progs: t-device-gap's btrfs).
DEPS_BUILD := build-essential pkg-config libelf-dev libzstd-dev zlib1g-dev libmd-dev libbpf-dev clang
DEPS_TEST  := elfutils binutils gcc-multilib clang llvm libclang-rt-14-dev attr \
	      libcap2-bin acl openssl e2fsprogs util-linux procps time file coreutils python3 strace \
	      libssl-dev btrfs-progs
DEPS_ALL   := $(DEPS_BUILD) $(DEPS_TEST)

.PHONY: all deps check check-tool demo fuzz install clean man FORCE

# Plain `make` builds the tool, whatever targets the parts below define first.
.DEFAULT_GOAL := all

# Each part keeps its own targets, packages (DEPS_ALL +=) and checks (CHECKS +=).
CHECKS := check-tool
-include kernel-patch/kernel.mk
-include rpm-scripts/rpm.mk
-include deb-scripts/deb.mk
-include stap/stap.mk
-include kernel-patch/bench/bench.mk

all: $(BUILD)/pbitmap $(BUILD)/pbitmap-run $(BUILD)/pbitmap-audit.so $(BUILD)/pbitmapd

# The modules of `run` (prefetch.c and what reading a bitmap needs) and
# their libraries: the launcher's, and the first part of the tool (below).
RUN_MODULES := prefetch.c willneed.c record.c plan.c elfstore.c xattrstore.c marker.c pbfile.c \
	       replace.c confine.c messages.c args.c filelist.c
RUN_LIBS := -lelf -lzstd -lz

# Building the tool builds its launcher too (pbitmap-run, below): the tests
# of `run` need both, and `make build/pbitmap` is what everyone runs.
#
# The link order lays the binary out so that a cold `pbitmap run` reads of
# it what pbitmap-run reads of itself (t-prefetch compares them): run's
# modules and main.c first, then the library members they need (the first
# group: the linker places an archive's members where the archive is named),
# then the other verbs' modules and the members only they need.  Static
# glibc calls the IFUNC resolver of every member linked in at start-up,
# whatever the verb: -u pulls those that only other verbs need (strnlen,
# for strstr; wcschr, for strftime) into the first part too.  In
# t-prefetch's set-up this took a cold `pbitmap run` from 90 read requests
# to 78-79 (pbitmap-run: 80-81; medians of 7).
TOOL_FIRST := $(addprefix $(TOOL_DIR)/src/,$(RUN_MODULES) main.c)
TOOL_REST  := $(filter-out $(TOOL_FIRST),$(SRCS))
TOOL_EARLY := -Wl,-u,strnlen,-u,wcschr
$(BUILD)/pbitmap: $(SRCS) $(HDRS) $(TOOL_DIR)/VERSION | $(BUILD) $(BUILD)/pbitmap-run
	$(CC) $(CPPFLAGS) $(CFLAGS) $(STATIC) -o $@ $(TOOL_EARLY) $(TOOL_FIRST) \
		-Wl,--start-group $(RUN_LIBS) -lgcc -lgcc_eh -lc -Wl,--end-group $(TOOL_REST) $(TOOL_LIBS)

$(BUILD)/asan/pbitmap: $(SRCS) $(HDRS) $(TOOL_DIR)/VERSION | $(BUILD)
	@mkdir -p $(BUILD)/asan
	$(CC) $(CPPFLAGS) $(SAN_CFLAGS) -o $@ $(SRCS) $(ASAN_LIBS)

# The launcher (pbitmap-tool/run/pbitmap-run.c): `run` alone, static, with
# no digests, so its own start-up costs a cold start as little as possible.
RUN_SRCS := $(addprefix $(TOOL_DIR)/src/,$(RUN_MODULES)) $(TOOL_DIR)/run/pbitmap-run.c
$(BUILD)/pbitmap-run: $(RUN_SRCS) $(HDRS) $(TOOL_DIR)/VERSION | $(BUILD)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(STATIC) -o $@ $(RUN_SRCS) $(RUN_LIBS)

# The LD_AUDIT module (pbitmap-tool/audit/pbitmap-audit.c): the user-space
# baseline the kernel's prefetch is measured against (make bench, condition
# audit; tests/tool/t-audit.sh).  Only the record's modules, zlib linked in,
# nothing exported but ld.so's la_* entry points; the functions of those
# modules it does not call (marker.c's writers, which print) are left out.
AUDIT_SRCS := $(TOOL_DIR)/audit/pbitmap-audit.c \
	      $(addprefix $(TOOL_DIR)/src/,record.c plan.c marker.c willneed.c)
$(BUILD)/pbitmap-audit.so: $(AUDIT_SRCS) $(HDRS) | $(BUILD)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -ffunction-sections -shared \
		-Wl,-z,defs,--gc-sections,--exclude-libs,ALL \
		-o $@ $(AUDIT_SRCS) -Wl,-Bstatic -lz -Wl,-Bdynamic

# The daemon (pbitmap-tool/daemon/): run's modules, static as
# the launcher (it runs on machines whose libraries it prefetches).
DAEMON_SRCS := $(addprefix $(TOOL_DIR)/src/,$(RUN_MODULES)) \
	       $(filter-out %.bpf.c,$(wildcard $(TOOL_DIR)/daemon/*.c))
DAEMON_HDRS := $(wildcard $(TOOL_DIR)/daemon/*.h)
# blockdev.c: config.c finds /usr's device as device-gap finds the one it measures
DAEMON_SRCS += $(TOOL_DIR)/src/blockdev.c
# generation.c, pageset.c: learning's generations; planfiles.c: its plans
DAEMON_SRCS += $(TOOL_DIR)/src/generation.c $(TOOL_DIR)/src/pageset.c $(TOOL_DIR)/src/planfiles.c
# Learning (daemon/learn.bpf.c): one BPF object, CO-RE, built into the
# daemon (learn.c .incbin's it); libbpf linked in.
DAEMON_LIBS := -lbpf $(RUN_LIBS)
DAEMON_FLAGS = -DPBD_LEARN_OBJ='"$(abspath $(BUILD)/learn.bpf.o)"'
$(BUILD)/learn.bpf.o: $(TOOL_DIR)/daemon/learn.bpf.c $(TOOL_DIR)/daemon/learn.h | $(BUILD)
	clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I/usr/include/$(shell gcc -dumpmachine) \
		-Wall -Werror -c -o $@ $<
$(BUILD)/pbitmapd: $(DAEMON_SRCS) $(HDRS) $(DAEMON_HDRS) $(BUILD)/learn.bpf.o $(TOOL_DIR)/VERSION | $(BUILD)
	$(CC) $(CPPFLAGS) $(DAEMON_FLAGS) $(CFLAGS) $(STATIC) -o $@ $(DAEMON_SRCS) $(DAEMON_LIBS)
$(BUILD)/asan/pbitmapd: $(DAEMON_SRCS) $(HDRS) $(DAEMON_HDRS) $(BUILD)/learn.bpf.o $(TOOL_DIR)/VERSION | $(BUILD)
	@mkdir -p $(BUILD)/asan
	$(CC) $(CPPFLAGS) $(DAEMON_FLAGS) $(SAN_CFLAGS) -o $@ $(DAEMON_SRCS) $(DAEMON_LIBS)

$(BUILD)/asan/pbitmap-run: $(RUN_SRCS) $(HDRS) $(TOOL_DIR)/VERSION | $(BUILD)
	@mkdir -p $(BUILD)/asan
	$(CC) $(CPPFLAGS) $(SAN_CFLAGS) -o $@ $(RUN_SRCS) $(RUN_LIBS)

# Three fuzz targets (pbitmap-tool/fuzz/): fuzz_parse links the parsing modules
# only, not the command modules (it defines the message functions of
# messages.c itself, silently); fuzz_stamp runs the verbs that write on a
# file, so it links everything but main.c and the modules of record, run,
# prefetch and stamp --rpm; fuzz_import (profiles, `import`) links what fuzz_stamp does.
# fuzz_stamp checks `digest` against OpenSSL's SHA-256, an implementation
# independent of the tool's (libmd), so it alone links libcrypto.
FUZZ_CMDS := main.c messages.c args.c filelist.c rpm.c observe.c prefetch.c \
	     $(notdir $(wildcard $(TOOL_DIR)/src/cmd-*.c))
FUZZ_SRCS := $(filter-out $(addprefix $(TOOL_DIR)/src/,$(FUZZ_CMDS)),$(SRCS)) \
	     $(TOOL_DIR)/fuzz/fuzz_parse.c
FUZZ_STAMP_SRCS := $(filter-out $(addprefix $(TOOL_DIR)/src/,main.c cmd-record.c observe.c prefetch.c rpm.c),$(SRCS)) \
		   $(TOOL_DIR)/fuzz/fuzz_stamp.c
FUZZ_CFLAGS := $(CPPFLAGS) -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined -DPBITMAP_FUZZING
FUZZ_IMPORT_SRCS := $(filter-out %/fuzz_stamp.c,$(FUZZ_STAMP_SRCS)) $(TOOL_DIR)/fuzz/fuzz_import.c
FUZZ_TARGETS := $(BUILD)/fuzz/fuzz_parse $(BUILD)/fuzz/fuzz_stamp $(BUILD)/fuzz/fuzz_import
$(BUILD)/fuzz/fuzz_parse: $(FUZZ_SRCS) $(HDRS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz
	clang $(FUZZ_CFLAGS) -o $@ $(FUZZ_SRCS) $(LIBS)
$(BUILD)/fuzz/fuzz_stamp: $(FUZZ_STAMP_SRCS) $(HDRS) $(FUZZ_HDRS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz
	clang $(FUZZ_CFLAGS) -o $@ $(FUZZ_STAMP_SRCS) $(LIBS) -lcrypto

$(BUILD)/fuzz/fuzz_import: $(FUZZ_IMPORT_SRCS) $(HDRS) $(FUZZ_HDRS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz
	clang $(FUZZ_CFLAGS) -DPBITMAP_FUZZ_SEEDS='"$(CURDIR)/$(TOOL_DIR)/fuzz/seeds"' \
		-o $@ $(FUZZ_IMPORT_SRCS) $(LIBS)

$(BUILD):
	@mkdir -p $(BUILD)

# The compiler flags of the last build: when they change (`make check` after
# a plain `make` adds -Werror), the binaries are rebuilt.  The file is
# rewritten only when they differ, so that its time says when they changed.
BUILD_FLAGS = $(CC) $(CPPFLAGS) $(CFLAGS) | $(SAN_CFLAGS) | $(LIBS) | $(TOOL_EARLY) $(TOOL_LIBS) $(STATIC)
$(BUILD)/pbitmap $(BUILD)/asan/pbitmap $(BUILD)/pbitmap-run $(BUILD)/asan/pbitmap-run \
	$(BUILD)/pbitmap-audit.so $(BUILD)/pbitmapd $(BUILD)/asan/pbitmapd: $(BUILD)/cflags
$(BUILD)/cflags: FORCE | $(BUILD)
	$(if $(subst $(BUILD_FLAGS),,$(file <$@))$(subst $(file <$@),,$(BUILD_FLAGS)),\
		$(file >$@,$(BUILD_FLAGS)))
FORCE:

# Idempotent: apt-get runs only when a package is missing.
deps:
	@missing=$$(for p in $(DEPS_ALL); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -z "$$missing" ]; then echo "make deps: all packages present"; exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "make deps: missing $$missing; run as root" >&2; exit 1; fi; \
	echo "make deps: installing" $$missing; \
	apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing

# The checks run side by side (CHECK_JOBS at once): the tool's tests, the
# package tests and the guest image beside the kernel build, the systemtap
# and benchmark guests beside the kernel tests' two guests.  The critical
# path is the kernel build, then those two guests (together CPU-bound);
# the rest fits beside them.  Each guest run has its own job directory and
# lock.  -k: every check
# runs and reports, whichever fails; -Otarget: each one's output in one
# piece, when it ends.  On failure the guests' failed tests are named again
# at the end: a long log may be read by its head and tail only.
CHECK_JOBS ?= 4
GUEST_OUTPUTS = $(BUILD)/vm-stock-results/output $(BUILD)/vm-lsm-results/output \
	$(BUILD)/vm-shard-*/results/output $(STAP_VM)/results/output
check: deps
	$(MAKE) -j$(CHECK_JOBS) -k -Otarget PBITMAP_WERROR=1 $(CHECKS) || { \
		echo "make check: FAILED; the guests' failed tests:"; \
		$(KP_DIR)/scripts/vm-failures $(GUEST_OUTPUTS); exit 1; }

check-tool: $(BUILD)/pbitmap $(BUILD)/asan/pbitmap $(BUILD)/pbitmap-audit.so $(FUZZ_TARGETS) \
	    $(BUILD)/pbitmapd $(BUILD)/asan/pbitmapd
	tests/run-tests tests/tool

# User-space prefetch on the host, then the patched kernel in the VM as
# systemtap sees it (table and fault-map PNG, build/stap/fault-map-gcc.png).
demo: deps
	$(MAKE) $(BUILD)/pbitmap
	tests/demo.sh
	$(MAKE) stap-demo

# FUZZ_SECONDS for each target, each with its own corpus.
fuzz: $(FUZZ_TARGETS)
	@for t in $(notdir $(FUZZ_TARGETS)); do \
		mkdir -p $(BUILD)/fuzz/corpus-$$t && \
		$(BUILD)/fuzz/$$t -close_fd_mask=3 -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
			$(BUILD)/fuzz/corpus-$$t $(TOOL_DIR)/fuzz/seeds || exit 1; \
	done

# UNITDIR: where systemd looks for pbitmapd.service (Debian 12's packages:
# /lib/systemd/system; rpm: %{_unitdir}).  The unit is installed, never
# enabled: pbitmapd(8).  pbitmap-device-gap.service is installed enabled (a
# link in multi-user.target.wants): the join gap a user gets by default.
UNITDIR ?= $(PREFIX)/lib/systemd/system
install: $(BUILD)/pbitmap $(BUILD)/pbitmap-run $(BUILD)/pbitmapd
	install -D -m 0755 $(BUILD)/pbitmap $(DESTDIR)$(PREFIX)/bin/pbitmap
	install -D -m 0755 $(BUILD)/pbitmap-run $(DESTDIR)$(PREFIX)/bin/pbitmap-run
	install -D -m 0755 $(BUILD)/pbitmapd $(DESTDIR)$(PREFIX)/sbin/pbitmapd
	install -D -m 0644 $(TOOL_DIR)/pbitmap.1 $(DESTDIR)$(PREFIX)/share/man/man1/pbitmap.1
	install -D -m 0644 $(TOOL_DIR)/daemon/pbitmapd.8 $(DESTDIR)$(PREFIX)/share/man/man8/pbitmapd.8
	@mkdir -p $(DESTDIR)$(UNITDIR)
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g' $(TOOL_DIR)/daemon/pbitmapd.service \
		>$(DESTDIR)$(UNITDIR)/pbitmapd.service
	sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SBINDIR@|$(PREFIX)/sbin|g' \
		$(TOOL_DIR)/pbitmap-device-gap.service \
		>$(DESTDIR)$(UNITDIR)/pbitmap-device-gap.service
	@mkdir -p $(DESTDIR)$(UNITDIR)/multi-user.target.wants
	ln -sf ../pbitmap-device-gap.service \
		$(DESTDIR)$(UNITDIR)/multi-user.target.wants/pbitmap-device-gap.service

clean:
	rm -rf $(BUILD)
