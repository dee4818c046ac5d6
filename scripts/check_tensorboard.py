#!/usr/bin/env python3
"""Read a fedrun run folder's TensorBoard event files with TensorBoard's own reader and check
every scalar against rounds.csv (CI runs it where the `tensorboard` package is installed).

    python3 scripts/check_tensorboard.py RUN_FOLDER [RUN_FOLDER ...]
"""
import csv
import math
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def check(folder):
    acc = EventAccumulator(folder, size_guidance={"scalars": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    with open(f"{folder}/rounds.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{folder}: rounds.csv has no rows")
    checked = 0
    for col in rows[0]:
        if col == "round" or rows[0][col] == "":
            continue
        if col not in tags:
            raise SystemExit(f"{folder}: no scalar {col} (tags: {sorted(tags)})")
        got = {e.step: e.value for e in acc.Scalars(col)}
        for r in rows:
            want, step = float(r[col]), int(r["round"])
            if step not in got or not math.isclose(got[step], want, rel_tol=1e-6, abs_tol=1e-6):
                raise SystemExit(f"{folder}: {col} at round {step}: {got.get(step)} != {want}")
            checked += 1
    print(f"{folder}: {checked} scalars match rounds.csv (TensorBoard's reader)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for folder in sys.argv[1:]:
        check(folder)
