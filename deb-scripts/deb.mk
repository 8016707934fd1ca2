# deb-scripts/deb.mk, included by the top Makefile:
#   make deb        build/deb/pbitmap_VERSION_ARCH.deb, with dpkg-deb from a
#                   staged tree (no debhelper: the package is small and its
#                   maintainer scripts are these files)
#   make deb-check  tests/deb: dpkg transactions in an alternate root
#
# What the package does in dpkg transactions: deb-scripts/README.md.

DEPS_DEB := busybox-static
DEPS_ALL += $(DEPS_DEB)
CHECKS += deb-check

DEB_ARCH  := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_TOP   := $(abspath $(BUILD)/deb)
DEB_FILE  := $(DEB_TOP)/pbitmap_$(VERSION)_$(DEB_ARCH).deb
DEB_STAGE := $(DEB_TOP)/stage
DEB_INPUTS := $(wildcard deb-scripts/*) rpm-scripts/pbitmap.conf $(TOOL_DIR)/pbitmap.1 \
	      $(BUILD)/pbitmap $(BUILD)/pbitmap-run $(BUILD)/pbitmapd $(wildcard $(TOOL_DIR)/daemon/*)

.PHONY: deb deb-check

deb: $(DEB_FILE)

$(DEB_FILE): $(DEB_INPUTS)
	rm -rf $(DEB_STAGE)
	$(MAKE) install PREFIX=/usr UNITDIR=/lib/systemd/system DESTDIR=$(DEB_STAGE)
	gzip -9n $(DEB_STAGE)/usr/share/man/man1/pbitmap.1 $(DEB_STAGE)/usr/share/man/man8/pbitmapd.8
	install -D -m 0644 rpm-scripts/pbitmap.conf $(DEB_STAGE)/etc/pbitmap.conf
	install -D -m 0644 deb-scripts/apt.conf $(DEB_STAGE)/etc/apt/apt.conf.d/80pbitmap
	install -D -m 0755 deb-scripts/apt-pre-install $(DEB_STAGE)/usr/lib/pbitmap/apt-pre-install
	install -D -m 0755 deb-scripts/restamp $(DEB_STAGE)/usr/lib/pbitmap/restamp
	install -D -m 0755 deb-scripts/dpkg-verify $(DEB_STAGE)/usr/lib/pbitmap/dpkg-verify
	install -D -m 0644 deb-scripts/copyright $(DEB_STAGE)/usr/share/doc/pbitmap/copyright
	install -d -m 0755 $(DEB_STAGE)/var/lib/pbitmap $(DEB_STAGE)/DEBIAN
	install -m 0755 deb-scripts/postinst deb-scripts/postrm $(DEB_STAGE)/DEBIAN/
	install -m 0644 deb-scripts/triggers $(DEB_STAGE)/DEBIAN/triggers
	printf '/etc/pbitmap.conf\n/etc/apt/apt.conf.d/80pbitmap\n' >$(DEB_STAGE)/DEBIAN/conffiles
	sed -e 's/@VERSION@/$(VERSION)/' -e 's/@ARCH@/$(DEB_ARCH)/' \
	    -e "s/@SIZE@/$$(du -sk --exclude=DEBIAN $(DEB_STAGE) | cut -f1)/" \
	    deb-scripts/control >$(DEB_STAGE)/DEBIAN/control
	cd $(DEB_STAGE) && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' | \
		sort -z | xargs -0 md5sum >DEBIAN/md5sums
	dpkg-deb --root-owner-group -Zxz --build $(DEB_STAGE) $@

deb-check: $(DEB_FILE) $(BUILD)/pbitmap $(BUILD)/asan/pbitmap
	tests/run-tests tests/deb
