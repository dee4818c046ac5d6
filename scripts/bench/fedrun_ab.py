#!/usr/bin/env python3
"""Two fedrun binaries against each other on every model's local step and evaluation, in
alternating pairs on this machine (a change's before and after).

    git worktree add /tmp/before <commit> && (cd /tmp/before && cargo build --release)
    python3 scripts/bench/fedrun_ab.py /tmp/before/target/release/fedrun target/release/fedrun \\
        --pairs 3 --out ab.json

For each model, --pairs times in turn (the order flipping every pair): `fedrun bench --workload
model --model M --steps S --rounds 1` with each binary, S the local steps of
scripts/bench/cpu_table.py. Per model and figure: each binary's median, and the median of the
per-pair ratios after / before with their range. Prints a markdown table; --out keeps the JSON
(--merge adds the pairs of earlier JSON files of the same two binaries; with --pairs 0 it only
prints their table).
"""

import argparse
import json
import statistics
import subprocess
import sys

from cpu_table import STEPS


def summary(binary, m):
    p = subprocess.run([binary, "bench", "--workload", "model", "--model", m, "--steps",
                        str(STEPS[m]), "--rounds", "1"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if '"summary"' in line:
            return json.loads(line)
    raise RuntimeError(f"{binary} {m}: {p.stderr.strip()[-400:]}")


def pairs(before, after, m, n):
    """n pairs of (before, after) summaries, alternating which runs first."""
    out = []
    for i in range(n):
        order = [before, after] if i % 2 == 0 else [after, before]
        got = {b: summary(b, m) for b in order}
        out.append((got[before], got[after]))
    return out


def ms(v):
    """Milliseconds: three significant digits below 100, whole numbers above."""
    return f"{v * 1e3:.3g}" if v < 0.1 else f"{v * 1e3:,.0f}"


def table(res):
    lines = ["| model | step before ms | step after ms | after / before (pairs; range) | "
             "eval before ms | eval after ms | after / before (pairs; range) |",
             "|---|---|---|---|---|---|---|"]
    for m, ps in res.items():
        cells = [m]
        for key in ("median_step_s", "median_eval_s"):
            b = [p[0][key] for p in ps]
            a = [p[1][key] for p in ps]
            r = [y / x for x, y in zip(b, a)]
            cells += [ms(statistics.median(b)), ms(statistics.median(a)),
                      f"**{statistics.median(r):.2f}** ({len(r)}; {min(r):.2f}–{max(r):.2f})"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--models", default=",".join(STEPS))
    p.add_argument("--out")
    p.add_argument("--merge", nargs="*", default=[])
    a = p.parse_args()
    res = {}
    for f in a.merge:
        for m, ps in json.load(open(f)).items():
            res.setdefault(m, []).extend(ps)
    for m in a.models.split(",") if a.pairs > 0 else []:
        print(f"{m} ...", file=sys.stderr, flush=True)
        res.setdefault(m, []).extend(pairs(a.before, a.after, m, a.pairs))
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)
    print(table(res))


if __name__ == "__main__":
    main()
