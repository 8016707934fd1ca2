import sys, collections, statistics
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 6 and f[0] in ("python3", "gdb", "cc1"):
        rows[(f[0], f[1])].append((int(f[2]), float(f[3]), int(f[4]), 0, int(f[5])))
conds = []
for (w, c) in rows:
    if c not in conds: conds.append(c)
for w in ("python3", "gdb", "cc1"):
    out = []
    for c in conds:
        r = rows.get((w, c))
        if not r: continue
        med = lambda i: statistics.median(x[i] for x in r)
        out.append("%s maj %g req %g(+%g) %.2fs" % (c, med(0), med(2), med(4)-med(2), med(1)))
    print(w, " | ".join(out))
