# rpm-scripts/rpm.mk, included by the top Makefile:
#   make rpm        the pbitmap RPMs (and SRPM) with rpmbuild, under build/rpm/
#   make rpm-check  tests/rpm: real rpmbuild and rpm transactions in alternate roots
#
# Debian's rpm knows nothing of the dpkg packages, so rpmbuild runs with
# --nodeps (the spec's BuildRequires are for rpm-based systems).

DEPS_RPM := rpm busybox-static cpio
DEPS_ALL += $(DEPS_RPM)
CHECKS += rpm-check

RPM_TOP    := $(abspath $(BUILD)/rpm)
RPM_FILES  := Makefile README.md docs $(TOOL_DIR) rpm-scripts
RPM_INPUTS := Makefile README.md $(wildcard docs/* rpm-scripts/*) $(SRCS) $(HDRS) \
	      $(TOOL_DIR)/VERSION $(TOOL_DIR)/pbitmap.1 $(wildcard $(TOOL_DIR)/daemon/*)

.PHONY: rpm rpm-check

rpm: $(RPM_TOP)/built

$(RPM_TOP)/built: $(RPM_INPUTS)
	rm -rf $(RPM_TOP)
	mkdir -p $(RPM_TOP)/SOURCES
	tar -czf $(RPM_TOP)/SOURCES/pbitmap-$(VERSION).tar.gz \
		--transform 's,^,pbitmap-$(VERSION)/,' $(RPM_FILES)
	cp rpm-scripts/macros.pbitmap rpm-scripts/pbitmap.conf rpm-scripts/pbitmap-ship $(RPM_TOP)/SOURCES/
	@echo "rpmbuild -ba rpm-scripts/pbitmap.spec (log: $(RPM_TOP)/rpmbuild.log)"
	@rpmbuild --nodeps --define "_topdir $(RPM_TOP)" \
		--define "pbitmap_version $(VERSION)" \
		-ba rpm-scripts/pbitmap.spec >$(RPM_TOP)/rpmbuild.log 2>&1 || \
		{ tail -n 40 $(RPM_TOP)/rpmbuild.log; echo "make rpm: rpmbuild failed" >&2; exit 1; }
	@find $(RPM_TOP)/RPMS $(RPM_TOP)/SRPMS -name '*.rpm' | sort
	touch $@

rpm-check: $(RPM_TOP)/built $(BUILD)/pbitmap $(BUILD)/asan/pbitmap
	tests/run-tests tests/rpm
