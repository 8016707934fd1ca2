#!/bin/bash
# t-timing: the trigger's first run on a full root, timed.
#
# A package built here holds a copy of the host's /usr/bin and
# /usr/lib/x86_64-linux-gnu (regular files up to TIMING_MAX_MB MiB each,
# default 16, and symbolic links: the ELF programs and libraries and
# everything beside them), a few thousand paths registered in the root's
# rpm db.  Installing the pbitmap
# RPM then runs its trigger over every one of them.  Printed: the number of
# paths and ELF files, the trigger's summary (files stamped, in how many
# seconds, by pbitmap's own clock) and the wall time of the whole `rpm -i`.
# Asserted (no figure is hard-coded): the transaction succeeds; the trigger
# handles every ELF executable and library of the package (its stamped count
# plus its errors and skips equals the number of such files, counted here
# independently with python), with errors only for ELF files pbitmap refuses
# (listed); `stamp --rpm-all` from the host afterwards finds them all already
# stamped; programs copied from the host still run stamped in the root.
# Why: every pbitmap install or upgrade replays the whole system; it must
# finish in bounded time and say how much it did.

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/rpmlib.sh"
max_mb=${TIMING_MAX_MB:-16}

make_root "$(tmpdir)/root"
d=$(tmpdir)
python3 - "$d/payload" "$max_mb" >"$d/elf-list" <<'PY' || fail "copying the host's files"
import os, shutil, stat, sys
dest, limit = sys.argv[1], int(sys.argv[2]) << 20
for top in ("/usr/bin", "/usr/lib/x86_64-linux-gnu"):
    for root, dirs, files in os.walk(top):
        for name in files:
            src = os.path.join(root, name)
            st = os.lstat(src)
            dst = dest + src
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if stat.S_ISLNK(st.st_mode):    # library links: the programs need them
                os.symlink(os.readlink(src), dst)
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                continue
            shutil.copy2(src, dst)
            with open(src, "rb") as f:
                head = f.read(18)
            # ELF, little-endian, ET_EXEC or ET_DYN: what the trigger is for.
            if head[:4] == b"\x7fELF" and head[5] == 1 and head[16] in (2, 3):
                print(src)
PY
npaths=$(find "$d/payload" ! -type d | wc -l)
nelf=$(wc -l <"$d/elf-list")
note "payload: $npaths files and links (regular files up to $max_mb MiB each) from /usr/bin and /usr/lib/x86_64-linux-gnu, $nelf ELF executables/libraries, $(du -sm "$d/payload" | cut -f1) MiB"
((nelf > 500)) || fail "too few ELF files on the host for a full root ($nelf)"

full=$(build_rpm hostcopy 1.0 "$d/payload" '/usr/bin/*
/usr/lib/x86_64-linux-gnu' --define '_binary_payload w0.ufdio' --define '_build_id_links none') || exit 1
expect_status 0 rpmi -i "$full"
nreg=$(rpmr -ql hostcopy | wc -l)
note "hostcopy installed: $nreg paths in the rpm db"

start=$(date +%s.%N)
expect_status 0 rpmi -i "$PB_RPM"
end=$(date +%s.%N)
wall=$(python3 -c "print(f'{$end - $start:.2f}')")
stamped=$(summary_count stamped "$ERR")
errors=$(summary_count errors "$ERR")
skipped=$(summary_count skipped "$ERR")
note "command: rpm --root ROOT --dbpath /var/lib/rpm --force-debian --nodeps -i $(basename "$PB_RPM")"
note "trigger: $(summary_of "$ERR")"
note "rpm -i wall time: $wall s; trigger: $stamped files stamped in $(summary_count seconds "$ERR") s"
if [[ $errors != 0 || $skipped != 0 ]]; then
	note "problem lines:"
	grep -v '^pbitmap: [0-9]* files stamped' "$ERR" | sed 's/^/#   /'
fi
# the package's ELF files and pbitmap's own launcher and daemon, pbitmap-run
# and pbitmapd
((stamped + errors + skipped == nelf + 2)) ||
	fail "$nelf ELF executables/libraries in the package, pbitmap-run and pbitmapd, but $stamped stamped + $errors errors + $skipped skipped"
((stamped > 0)) || fail "nothing stamped"
# Every error must be pbitmap refusing a file it cannot stamp.
[[ -z $(grep -v '^pbitmap: [0-9]* files stamped' "$ERR" | grep -v -E 'no section header table|extended section numbering|section header|big-endian|unsupported|is being executed') ]] ||
	fail "unexpected problems: $(cat "$ERR")"
pass "trigger on a full root: $stamped of $nelf ELF files stamped, $errors refused, $skipped skipped"

# From the host, --rpm-all also stamps the root's /usr/bin/pbitmap, which the
# trigger passed over because it was running it.
"$PBITMAP" stamp --root "$R" --dbpath /var/lib/rpm --rpm-all 2>"$d/again" >/dev/null
[[ $(summary_count stamped "$d/again") == 1 && $(summary_count already "$d/again") == "$stamped" ]] ||
	fail "stamp --rpm-all afterwards: $(summary_of "$d/again") (expected 1 stamped, $stamped already)"
assert_stamped "$R/usr/bin/pbitmap"
note "stamp --rpm-all afterwards: $(summary_of "$d/again")"

# Every pbitmap upgrade replays the whole system: cheap when all is stamped.
expect_status 0 rpmi -U --replacepkgs "$PB_RPM"
# (the package's new, unstamped pbitmap-run and pbitmapd are stamped again)
[[ $(summary_count stamped "$ERR") == 2 && $(summary_count already "$ERR") == $((stamped - 2)) ]] ||
	fail "reinstalling pbitmap: $(summary_of "$ERR") (expected 2 stamped, the new pbitmap-run and pbitmapd, $((stamped - 2)) already; the new /usr/bin/pbitmap is the one running)"
note "pbitmap reinstalled (the replay of every upgrade): $(summary_of "$ERR")"

for prog in ls sort; do
	[[ -f $R/usr/bin/$prog ]] || continue
	is_stamped "$R/usr/bin/$prog" || fail "/usr/bin/$prog not stamped"
	chroot "$R" "/usr/bin/$prog" --version >/dev/null || fail "stamped $prog does not run in the root"
done
pass "stamp --rpm-all afterwards: the trigger's files already stamped, plus the root's pbitmap; stamped host programs run in the root"
