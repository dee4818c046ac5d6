#!/usr/bin/env python3
"""Where a GPU run's time goes, kernel by kernel, from cubecl's own profiling log.

    CUBECL_DEBUG_LOG=stderr CUBECL_DEBUG_OPTION=profile \\
        fedrun bench --workload model --model resnet18 --steps 5 --rounds 1 \\
        --set 'run.backend="vulkan"' 2> prof.log
    python3 scripts/bench/cubecl_profile.py prof.log [--top 25]

cubecl writes one line per profiled kernel launch, `| <duration> | <kernel name>`; this sums
them per kernel name (the warm-up included) and prints the top kernels by total time, with
their launch count and mean, and the share of all profiled time.
"""

import argparse
import collections
import re
import sys

UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
LINE = re.compile(r"^\|\s*([0-9.]+)(ns|µs|us|ms|s)\s*\|\s*(.+?)\s*$")


def parse(lines):
    """Total seconds and launches per kernel name."""
    total, count = collections.Counter(), collections.Counter()
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        secs = float(m.group(1)) * UNITS[m.group(2)]
        name = m.group(3)
        total[name] += secs
        count[name] += 1
    return total, count


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("log", help="the stderr of a run with CUBECL_DEBUG_OPTION=profile")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--width", type=int, default=140, help="kernel names cut to this width")
    a = p.parse_args(argv)
    with open(a.log, errors="replace") as f:
        total, count = parse(f)
    all_s = sum(total.values())
    n = sum(count.values())
    print(f"{a.log}: {n} profiled launches, {all_s * 1e3:.1f} ms in all, "
          f"{len(total)} distinct kernels")
    print(f"{'total ms':>10} {'share':>6} {'launches':>8} {'mean µs':>9}  kernel")
    for name, s in total.most_common(a.top):
        short = name if len(name) <= a.width else name[:50] + " … " + name[-(a.width - 53):]
        print(f"{s * 1e3:10.2f} {s / all_s:6.1%} {count[name]:8d} "
              f"{s / count[name] * 1e6:9.1f}  {short}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
