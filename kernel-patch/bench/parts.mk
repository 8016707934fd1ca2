# kernel-patch/bench/parts.mk: the benchmark's data-file workload, built on
# the host (included by bench.mk).
#   $(BENCH_PACKLOOKUP)  packlookup, the program that looks objects up in a
#                        git pack through mappings (packlookup.c)
#   $(BENCH_PACK)        a git pack of the test-bed's Linux source, and its
#                        index beside it (make-pack.sh; a few minutes, once)

BENCH_PACKLOOKUP := $(BUILD)/bench/packlookup
BENCH_PACK := $(BUILD)/bench/linux.pack

$(BENCH_PACKLOOKUP): kernel-patch/bench/packlookup.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_DEFAULT_SOURCE -O2 -g -Wall -Wextra $(if $(PBITMAP_WERROR),-Werror) \
		-o $@ $< -lz

$(BENCH_PACK): $(KSRC_STAMP) kernel-patch/bench/make-pack.sh
	kernel-patch/bench/make-pack.sh $(dir $@) $(KSRC)
