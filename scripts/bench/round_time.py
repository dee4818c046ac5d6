#!/usr/bin/env python3
"""How long a paper's experiment takes: seconds per round and hours per run of each paper
setting, on each machine of docs/perf, for fedrun and for PyTorch, from the step and
evaluation times measured there.

    python3 scripts/bench/round_time.py            # prints the Markdown table
    python3 scripts/bench/round_time.py --json     # the same figures as JSON

A round is its clients' local steps plus, every `fl.eval_every` rounds, one test evaluation:

    round_s = clients_per_round × steps_per_client × step_s × (batch / bench_batch) × cost
            + eval_s × (test / bench_test) × cost / eval_every

where step_s and eval_s are one local step and one test evaluation of the model as
`fedrun bench --workload model` and `torch_models.py` time them (docs/perf/*.json), at the
bench's batch and test-set size; a setting with another batch or test set is scaled by its
samples (`cost` is 4 for Tiny-ImageNet's 64×64 images against CIFAR's 32×32). Scaling by samples
is exact on a CPU, where a step's time grows with its batch, and an upper bound on a GPU, where a
larger batch costs less than in proportion. The aggregation and the server step are left out
(under 1 % of a round on every model measured). `steps_per_client` is the config's
`local.steps`, or `local.epochs` × the batches of the mean client (the data set's training
samples over `data.num_clients`; LEAF users: the LEAF paper's mean user; Shakespeare: the
config's `data.crop_train`).

Only the standard library is needed (Python 3.11: tomllib).
"""

import argparse
import json
import math
import os
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PERF = os.path.join(ROOT, "docs", "perf")

# Training samples of each data set (the standard splits); LEAF: the mean user's, from the LEAF
# paper (FEMNIST: 805,263 samples of 3,550 users; CelebA: 200,288 of 9,343), 90 % of it training.
TRAIN = {"cifar10": 50_000, "cifar100": 50_000, "tiny-imagenet": 100_000, "mnist": 60_000}
LEAF_USER = {"femnist": (0.9 * 805_263 / 3_550), "celeba": (0.9 * 200_288 / 9_343)}
TEST = {"cifar10": 10_000, "cifar100": 10_000, "tiny-imagenet": 10_000, "mnist": 10_000}
COST = {"tiny-imagenet": 4.0}

# The bench's batch and test set of each model (src/cli/bench_models.rs, SETTINGS).
BENCH = {
    "resnet18": (50, 10_000), "cnn": (50, 10_000), "mnist-cnn": (128, 10_000),
    "mlp": (128, 10_000), "transformer": (100, 4_000), "transformer-small": (25, 2_000),
    "lstm": (50, 4_000), "lstm-small": (50, 4_000), "femnist-cnn": (50, 4_000),
    "celeba-cnn": (50, 4_000),
}

# (paper setting, config, bench model)
SETTINGS = [
    ("FedNAR, CIFAR-10 ResNet-18 (Table 1)", "configs/paper/cifar_fednar_resnet18.toml", "resnet18"),
    ("FedACG, CIFAR-10 ResNet-18, 100 clients (Table 1)", "configs/paper/fedacg_fedacg_resnet18.toml", "resnet18"),
    ("FedACG, CIFAR-100 ResNet-18, 500 clients (Table 1)", "configs/paper/fedacg_fedacg_resnet18_cifar100_500.toml", "resnet18"),
    ("FedACG, Tiny-ImageNet ResNet-18, 100 clients (Table 1)", "configs/paper/fedacg_fedacg_resnet18_tinyimagenet.toml", "resnet18"),
    ("FedACG, FEMNIST CNN (LEAF)", "configs/paper/fedacg_fedacg_femnist.toml", "femnist-cnn"),
    ("FedACG, CelebA CNN (LEAF)", "configs/paper/fedacg_fedacg_celeba.toml", "celeba-cnn"),
    ("FedACG, Shakespeare LSTM (Table 8)", "configs/paper/fedacg_fedacg_shakespeare.toml", "lstm-small"),
    ("Fed-LAMB, CIFAR-10 ResNet-18 (Table 1)", "configs/paper/fedlamb_fedlamb_resnet18.toml", "resnet18"),
    ("Fed-LAMB, MNIST CNN", "configs/fedlamb/mnist_fedlamb.toml", "mnist-cnn"),
    ("FedNAR, Shakespeare 2-layer transformer (CPU scale)", "configs/paper/fednar_shakespeare_cpu.toml", "transformer-small"),
    ("README quickstart", "configs/quickstart.toml", "transformer-small"),
]


def work(path):
    """Rounds, clients a round, local steps of a client, batch, evaluations, test samples and
    per-sample cost of a config."""
    with open(os.path.join(ROOT, path), "rb") as f:
        c = tomllib.load(f)
    data, fl, local = c["data"], c["fl"], c["local"]
    ds, batch = data["dataset"], local["batch_size"]
    if local.get("epochs", 0) > 0:
        if ds == "shakespeare":  # FedDyn's crop: every client the same window
            per_client = data.get("crop_train", 2000)
        else:
            per_client = LEAF_USER.get(ds) or TRAIN[ds] / data["num_clients"]
        steps = local["epochs"] * math.ceil(per_client / batch)
        batch = min(batch, per_client)
    else:
        steps = local["steps"]
    if ds == "shakespeare":
        test = data["num_clients"] * data.get("crop_test", 100)
    elif ds in LEAF_USER:
        test = data["num_clients"] * LEAF_USER[ds] / 9  # LEAF's 10 % test split
    else:
        test = TEST[ds]
    rounds, evals = fl["rounds"], fl["rounds"] // fl.get("eval_every", 1)
    return dict(rounds=rounds, clients=fl["clients_per_round"], steps=steps, batch=batch,
                evals=evals, test=test, cost=COST.get(ds, 1.0))


def machines():
    """{machine: {model: {who: (step_s, eval_s)}}} from docs/perf's JSON files."""
    out = {}
    for name, label in [("cpu_amd_family25_2026-11-25", "AMD EPYC Zen 4 (2 vCPU, AVX-512)"),
                        ("cpu_amd_family25_zen3_2026-12-07", "AMD EPYC Zen 3 (2 vCPU, AVX2)"),
                        ("cpu_intel_xeon_2026-11-25", "Intel Xeon (2 vCPU)")]:
        d = json.load(open(os.path.join(PERF, name + ".json")))
        m = {}
        for model, r in d["models"].items():
            s, e = r["step"], r["eval"]
            torch = lambda x: min(v for v in (x["torch_default_s"], x["torch_channels_last_s"]) if v)
            m[model] = {"fedrun": (s["fedrun_s"], e["fedrun_s"]), "pytorch": (torch(s), torch(e))}
        out[label] = m
    d = json.load(open(os.path.join(PERF, "gpu_h100_cuda_2026-11-28.json")))
    out["NVIDIA H100 (fedrun: cuda)"] = {
        r["model"]: {"fedrun": (r["fedrun_step_s"], r["fedrun_eval_s"]),
                     "pytorch": (r["torch_step_s"], r["torch_eval_s"])}
        for r in d["rows"] if r["backend"] == "cuda"}
    d = json.load(open(os.path.join(PERF, "gpu_h200_2026-11-26.json")))
    cuda = {"mlp": (1.45e-3, 37.3e-3), "transformer-small": (8.94e-3, 8.5e-3)}  # gpu_h200_cuda_2026-11-26.md
    out["NVIDIA H200 (fedrun: cuda)"] = {
        r["model"]: {"fedrun": cuda.get(r["model"]), "pytorch": (r["median_step_s"], r["median_eval_s"])}
        for r in d["torch_all"] if r.get("summary")}
    return out


def round_s(w, model, times):
    if times is None:
        return None
    step, ev = times
    b_batch, b_test = BENCH[model]
    train = w["clients"] * w["steps"] * step * (w["batch"] / b_batch) * w["cost"]
    evals = ev * (w["test"] / b_test) * w["cost"] * w["evals"] / w["rounds"]
    return train + evals


def rows():
    ms = machines()
    out = []
    for label, path, model in SETTINGS:
        w = work(path)
        r = dict(setting=label, config=path, model=model, **w, machines={})
        for mach, table in ms.items():
            t = table.get(model, {})
            f, p = round_s(w, model, t.get("fedrun")), round_s(w, model, t.get("pytorch"))
            r["machines"][mach] = dict(fedrun_round_s=f, pytorch_round_s=p)
        out.append(r)
    return out


def fmt_s(s):
    if s is None:
        return "–"
    return f"{s:.2g} s" if s < 10 else f"{s:,.0f} s"


def fmt_h(s, rounds):
    if s is None:
        return "–"
    h = s * rounds / 3600
    if h * 60 < 1:
        return "< 1 min"
    return f"{h * 60:.0f} min" if h < 1 else (f"{h:.1f} h" if h < 48 else f"{h / 24:.1f} days")


def markdown(rs):
    machs = list(rs[0]["machines"])
    head = "| paper setting | work | " + " | ".join(machs) + " |"
    lines = [head, "|" + "---|" * (2 + len(machs))]
    for r in rs:
        work_s = (f"{r['rounds']} rounds × {r['clients']} clients × {r['steps']} steps of "
                  f"{r['batch']:.0f}")
        cells = []
        for m in machs:
            x = r["machines"][m]
            f, p = x["fedrun_round_s"], x["pytorch_round_s"]
            mine = "–" if f is None else f"**{fmt_h(f, r['rounds'])}** ({fmt_s(f)} a round)"
            cells.append(f"{mine}; PyTorch {fmt_h(p, r['rounds'])} ({fmt_s(p)})")
        lines.append(f"| {r['setting']} | {work_s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rs = rows()
    print(json.dumps(rs, indent=1) if a.json else markdown(rs))


if __name__ == "__main__":
    main()
