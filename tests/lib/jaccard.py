#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""jaccard.py TRUTH.json [PBITMAP]: how close `pbitmap record` came to the truth.

For each file of TRUTH.json (the output of ground_truth.py), compares the
pages CMD really read with the newest generation of the file's bitmap (what
the last `pbitmap record` learned), both in the bitmap's granules.  Prints
one line a file, "PATH: J=0.xxx learned=N truth=N common=N", then
"overall: J=0.xxx learned=N truth=N common=N" (sums over the files), and
exits 1 if a file has no bitmap.  PBITMAP defaults to $PBITMAP or pbitmap.
"""
import json
import os
import subprocess
import sys


def granules(ranges):
    return {g for first, last in ranges for g in range(first, last + 1)}


def main():
    truth = json.load(open(sys.argv[1]))
    tool = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("PBITMAP", "pbitmap")
    page = truth["page_size"]
    tot = [0, 0, 0]
    for f in truth["files"]:
        out = subprocess.run([tool, "show", "--json", f["path"]], capture_output=True, text=True)
        if out.returncode:
            print("jaccard.py: %s: no bitmap: %s" % (f["path"], out.stderr.strip()), file=sys.stderr)
            return 1
        rec = json.loads(out.stdout)[0]
        shift = rec["page_shift"]
        learned = granules(rec["planes"][0]["ranges"])
        real = {(p * page) >> shift for p in granules(f["pages"])}
        common = len(learned & real)
        union = len(learned | real)
        j = common / union if union else 1.0
        print("%s: J=%.3f learned=%d truth=%d common=%d" % (f["path"], j, len(learned), len(real), common))
        for i, n in enumerate((len(learned), len(real), common)):
            tot[i] += n
    union = tot[0] + tot[1] - tot[2]
    print("overall: J=%.3f learned=%d truth=%d common=%d" % (tot[2] / union if union else 1.0, *tot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
