# check_pbitmapd_unit ROOT UNITDIR: pbitmapd as a package installed it in
# ROOT (sourced by the rpm and deb tests, after tests/lib.sh):
#   - UNITDIR/pbitmapd.service exists, and systemctl --root says "disabled";
#   - it passes systemd-analyze verify with no complaint at all (a copy whose
#     commands point into ROOT: the host has no /usr/sbin/pbitmapd);
#   - its bounding set has CAP_DAC_OVERRIDE, which root learners' writers keep;
#   - the packaged /etc/pbitmap.conf leaves the daemon off: --check-enabled
#     exits 1 (not 255, which would mean the file does not parse).
check_pbitmapd_unit() {
	local root=$1 unit=$1$2/pbitmapd.service copy state rc=0
	need systemctl systemd-analyze
	[[ -f $unit ]] || fail "$unit not installed"
	[[ -x $root/usr/sbin/pbitmapd ]] || fail "$root/usr/sbin/pbitmapd not installed"
	state=$(systemctl --root="$root" is-enabled pbitmapd.service 2>&1) || true
	[[ $state == disabled ]] || fail "pbitmapd.service is '$state' after install, not disabled"
	copy=$(tmpdir)/pbitmapd.service
	sed "s|/usr/sbin/pbitmapd|$root/usr/sbin/pbitmapd|g" "$unit" >"$copy"
	systemd-analyze verify --man=no "$copy" >"$ERR" 2>&1 ||
		fail "systemd-analyze verify pbitmapd.service: $(cat "$ERR")"
	[[ ! -s $ERR ]] || fail "systemd-analyze verify complains: $(cat "$ERR")"
	# a root learner's writer keeps CAP_DAC_OVERRIDE (learn.c): outside the
	# bounding set, every such write failed at its capset()
	grep -q "^CapabilityBoundingSet=.*CAP_DAC_OVERRIDE" "$unit" ||
		fail "pbitmapd.service: no CAP_DAC_OVERRIDE in CapabilityBoundingSet, which root learners' writers keep"
	"$root/usr/sbin/pbitmapd" --check-enabled -c "$root/etc/pbitmap.conf" 2>"$ERR" || rc=$?
	((rc == 1)) || fail "pbitmapd --check-enabled with the packaged pbitmap.conf: exit $rc, not 1: $(cat "$ERR")"
}

# check_device_gap_unit ROOT UNITDIR: pbitmap-device-gap.service as a package
# installed it in ROOT: present, enabled (the gap a user gets by default:
# the link a package ships in multi-user.target.wants),
# and clean under systemd-analyze verify (a copy pointing into ROOT).
check_device_gap_unit() {
	local root=$1 unit=$1$2/pbitmap-device-gap.service copy state
	need systemctl systemd-analyze
	[[ -f $unit ]] || fail "$unit not installed"
	# Enabled by its link in multi-user.target.wants, beside the unit.  Only
	# the link is checked: this host's systemctl --root does not read the
	# .wants of a vendor directory under /usr/lib (Debian's is /lib).
	[[ $(readlink -f "$1$2/multi-user.target.wants/pbitmap-device-gap.service") == "$(readlink -f "$unit")" ]] ||
		fail "pbitmap-device-gap.service is not enabled: no link in $2/multi-user.target.wants"
	copy=$(tmpdir)/pbitmap-device-gap.service
	sed "s|/usr/bin/pbitmap|$root/usr/bin/pbitmap|g" "$unit" >"$copy"
	systemd-analyze verify --man=no "$copy" >"$ERR" 2>&1 ||
		fail "systemd-analyze verify pbitmap-device-gap.service: $(cat "$ERR")"
	[[ ! -s $ERR ]] || fail "systemd-analyze verify complains: $(cat "$ERR")"
}
