# Sourced by the stock-kernel guest tests of pbitmapd (t-daemon.sh,
# t-daemon-learn.sh) with W set: their work directory, made afresh; fail();
# NOBODY; the checks that this is a stock kernel and pbitmapd is at hand.
HERE=$(cd "$(dirname "$0")" && pwd)
PBITMAPD=$HERE/pbitmapd
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" && cd "$W"
fail() { echo "FAIL: $*" >&2; [ -f "$W/daemon.log" ] && tail -n 20 "$W/daemon.log" >&2; exit 1; }
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

[ ! -e /proc/sys/vm/pbitmap_enabled ] ||
	fail "this kernel ($(uname -r)) has the pbitmap patch: the test wants Debian's stock kernel"
[ -x "$PBITMAPD" ] || fail "no pbitmapd beside the test ($PBITMAPD): make vm-check copies it"
