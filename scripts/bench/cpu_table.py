#!/usr/bin/env python3
"""A machine's whole CPU table: every model's local step and evaluation, fedrun against
PyTorch's default and channels-last settings, in alternating triples on this machine.

    python3 scripts/bench/cpu_table.py --fedrun target/release/fedrun \\
        --python torchenv/bin/python --out perf/

For each model, --triples times in turn: `fedrun bench --workload model` (one process),
`torch_models.py` in the default setting, and `torch_models.py --channels-last` (the
convolutional models), each with --threads threads and S local steps (S per model below, so
that every process takes a few seconds). Each figure is the median over the triples; the ratio
is fedrun over PyTorch's faster setting, taken per triple, and its median is reported with the
per-triple values. Writes cpu_table.json and cpu_table.md into --out, headed by the CPU model,
its SIMD features, the date, fedrun's commit and PyTorch's version, and prints the table.

Only the standard library is needed here; --python names the interpreter that has torch
(python3 -m venv torchenv && torchenv/bin/pip install torch==2.9.0 numpy).
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Local steps per timed process: a few seconds of work each on a 2-core machine.
STEPS = {"mlp": 50, "mnist-cnn": 20, "cnn": 20, "femnist-cnn": 20, "transformer-small": 20,
         "lstm-small": 20, "celeba-cnn": 10, "lstm": 10, "transformer": 5, "resnet18": 5}
CONV = {"cnn", "resnet18", "mnist-cnn", "femnist-cnn", "celeba-cnn"}
GOAL = {"resnet18": 1.0}  # every other model: 0.8
SIMD = ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
        "avx512_bf16", "amx_tile"]


def cpu_facts():
    """CPU model, vendor and the SIMD features the kernel reports (/proc/cpuinfo)."""
    model, vendor, family, number, flags = platform.processor() or "unknown", "unknown", "?", "?", set()
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            k = k.strip()
            if k == "model name":
                model = v.strip()
            elif k == "vendor_id":
                vendor = v.strip()
            elif k == "flags":
                flags = set(v.split())
            elif k == "cpu family":
                family = v.strip()
            elif k == "model":
                number = v.strip()
    except OSError:
        pass
    return {"cpu": model, "vendor": vendor, "family": family, "model": number,
            "cores": os.cpu_count(),
            "simd": [f for f in SIMD if f in flags]}


def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def summary(cmd, env=None):
    """Run one timing process; its summary line (JSON), or raise with its stderr."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-500:]}")
    for line in p.stdout.splitlines():
        if '"summary"' in line:
            return json.loads(line)
    raise RuntimeError(f"{' '.join(cmd)}: no summary line")


def one_triple(m, a):
    """fedrun, PyTorch default, PyTorch channels-last (None off the conv models)."""
    s = str(STEPS[m])
    fed = summary([a.fedrun, "bench", "--workload", "model", "--model", m, "--steps", s,
                   "--rounds", "1"])
    torch_cmd = [a.python, os.path.join(HERE, "torch_models.py"), "--model", m, "--steps", s,
                 "--reps", "1", "--threads", str(a.threads)]
    default = summary(torch_cmd)
    cl = summary(torch_cmd + ["--channels-last"]) if m in CONV else None
    return fed, default, cl


def measure(m, a):
    """--triples triples of one model: per figure the median, per ratio the per-triple list."""
    rows = {"step": [], "eval": []}
    torch_version = None
    for _ in range(a.triples):
        fed, default, cl = one_triple(m, a)
        torch_version = default.get("torch")
        for what, key in (("step", "median_step_s"), ("eval", "median_eval_s")):
            best = min(x[key] for x in (default, cl) if x is not None)
            rows[what].append({"fedrun": fed[key], "default": default[key],
                               "channels_last": None if cl is None else cl[key],
                               "ratio": fed[key] / best})
    out = {}
    for what, r in rows.items():
        med = lambda k: statistics.median(x[k] for x in r) if r[0][k] is not None else None  # noqa: E731
        ratios = [x["ratio"] for x in r]
        d, c = med("default"), med("channels_last")
        out[what] = {"fedrun_s": med("fedrun"), "torch_default_s": d, "torch_channels_last_s": c,
                     "faster": "channels-last" if c is not None and c < d else "default",
                     "ratio": statistics.median(ratios), "ratios": ratios}
    return out, torch_version


def table(res, facts, meta):
    def ms(v):
        """Milliseconds: three significant digits below 100, whole numbers above."""
        if v is None:
            return "–"
        return f"{v * 1e3:.3g}" if v < 0.1 else f"{v * 1e3:,.0f}"

    lines = [f"# fedrun against PyTorch on {facts['cpu']}", "",
             f"- CPU: {facts['cpu']} ({facts['vendor']}, family {facts['family']}"
             f"{', model ' + facts['model'] if facts.get('model', '?') != '?' else ''}), "
             f"{facts['cores']} cores; SIMD: {', '.join(facts['simd'])}",
             f"- date: {meta['date']}; fedrun {meta['commit']}; PyTorch {meta['torch']}; "
             f"{meta['threads']} threads each; median of {meta['triples']} alternating triples",
             "- ratio: fedrun over PyTorch's faster setting, per triple, then the median "
             "(goal ≤ 0.8, ResNet-18's step ≤ 1.0)", "",
             "| model | what | fedrun ms | PyTorch default ms | PyTorch channels-last ms | "
             "fedrun / PyTorch | per triple | goal |",
             "|---|---|---|---|---|---|---|---|"]
    for m, r in res.items():
        if "error" in r:
            lines.append(f"| {m} | – | error: {r['error'][:80]} | | | | | |")
            continue
        for what in ("step", "eval"):
            x = r[what]
            goal = GOAL.get(m, 0.8) if what == "step" else 0.8
            verdict = "met" if x["ratio"] <= goal else "not met"
            lines.append(
                f"| {m} | {what} | {ms(x['fedrun_s'])} | {ms(x['torch_default_s'])} | "
                f"{ms(x['torch_channels_last_s'])} | **{x['ratio']:.2f}** | "
                f"{', '.join(f'{v:.2f}' for v in x['ratios'])} | {goal}: {verdict} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--fedrun", default=os.path.join(ROOT, "target", "release", "fedrun"))
    p.add_argument("--python", default=sys.executable, help="the interpreter that has torch")
    p.add_argument("--models", default=",".join(STEPS), help="comma-separated (default: all)")
    p.add_argument("--triples", type=int, default=3)
    p.add_argument("--threads", type=int, default=2, help="PyTorch's threads (fedrun: rayon's)")
    p.add_argument("--out", default="cpu_table")
    p.add_argument("--render", metavar="JSON",
                   help="only write the markdown table of an earlier run's cpu_table.json")
    a = p.parse_args(argv)
    if a.render:
        d = json.load(open(a.render))
        meta = {k: d[k] for k in ("date", "commit", "torch", "threads", "triples")}
        print(table(d["models"], d["machine"], meta))
        return 0
    models = a.models.split(",")
    unknown = [m for m in models if m not in STEPS]
    if unknown:
        p.error(f"unknown models {unknown}; known: {', '.join(STEPS)}")
    os.makedirs(a.out, exist_ok=True)
    facts = cpu_facts()
    res, torch_version = {}, None
    for m in models:
        print(f"{m} ...", file=sys.stderr, flush=True)
        try:
            res[m], torch_version = measure(m, a)
        except RuntimeError as e:
            res[m] = {"error": str(e)}
    meta = {"date": datetime.date.today().isoformat(), "commit": git_commit(),
            "torch": torch_version, "threads": a.threads, "triples": a.triples}
    json.dump({"machine": facts, **meta, "models": res},
              open(os.path.join(a.out, "cpu_table.json"), "w"), indent=1)
    md = table(res, facts, meta)
    open(os.path.join(a.out, "cpu_table.md"), "w").write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
