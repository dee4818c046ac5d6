#!/usr/bin/env python3
"""One federated round in PyTorch, for `fedrun bench --workload round` side by side: K clients,
each S local steps of batch B from the same global model (SGD with the FedNAR paper's clip and
weight decay), then the mean of their updates.

    python3 scripts/bench/torch_round.py --config configs/X.toml --mode loop
    python3 scripts/bench/torch_round.py --model mlp --clients 50 --steps 5 --batch 10 --mode vmap

--mode loop: the clients one after another, each a copy of the model and its optimizer (the
official code of the three papers and every FL simulator). --mode vmap: the round's clients as
one computation with `torch.func` (`stack_module_state`, `vmap` over `grad` of
`functional_call`): the strongest PyTorch can do, which no simulator uses. Both use random
inputs of the model's real shape (torch_models.py's settings) and print one JSON line per
repetition and a summary with `median_round_s`.

--config reads `fl.clients_per_round`, `local.steps` (or `local.epochs` over --samples samples
a client), `local.batch_size`, `local.lr`, `local.weight_decay`, `local.max_norm`, `local.nar`
and `model.kind` (the settings of torch_models.py: mlp, cnn, resnet18, mnist-cnn, ...); flags
given after it override it.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_models as tm  # noqa: E402


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def data(s, clients, steps, device):
    """Each client's steps × batch random samples: `[K, S·B, ...]` inputs and labels."""
    gen = torch.Generator().manual_seed(0)
    xs, ys = [], []
    for _ in range(clients):
        x, y = tm.random_split(s, steps * s["batch"], gen)
        xs.append(x)
        ys.append(y)
    return torch.stack(xs).to(device), torch.stack(ys).to(device)


def clip_decay(grads, params, s):
    """FedNAR (g + wd·x, then the clip) or the baseline (clip g, then + wd·x), per client: the
    global norm over a client's tensors. `grads` and `params` are lists of `[K, ...]`."""
    wd, a = s["wd"], s["max_norm"]
    if s["nar"] and wd:
        grads = [g + wd * p for g, p in zip(grads, params)]
    if a > 0:
        sq = sum(g.flatten(1).pow(2).sum(1) for g in grads)
        scale = (a / (sq.sqrt() + 1e-6)).clamp(max=1.0)
        grads = [g * scale.view(-1, *[1] * (g.dim() - 1)) for g in grads]
    if not s["nar"] and wd:
        grads = [g + wd * p for g, p in zip(grads, params)]
    return grads


def round_loop(model, global_state, x, y, s):
    """The clients one after another, as the official code trains them; the mean update."""
    total = None
    b = s["batch"]
    for k in range(x.shape[0]):
        model.load_state_dict(global_state)
        opt = tm.make_optimizer(model, s)
        params = list(model.parameters())
        for step in range(s["steps"]):
            xb, yb = x[k, step * b:(step + 1) * b], y[k, step * b:(step + 1) * b]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(xb), yb).backward()
            tm.update(params, opt, s)
        with torch.no_grad():
            delta = [p - global_state[n] for n, p in model.named_parameters()]
            total = delta if total is None else [t + d for t, d in zip(total, delta)]
    return [t / x.shape[0] for t in total]


def round_vmap(model, global_state, x, y, s):
    """The clients as one computation: parameters `[K, ...]`, vmap over grad."""
    from torch.func import functional_call, grad, vmap

    k, b = x.shape[0], s["batch"]
    names = [n for n, _ in model.named_parameters()]
    params = {n: global_state[n].unsqueeze(0).repeat(k, *[1] * global_state[n].dim())
              for n in names}

    def loss(p, xb, yb):
        return F.cross_entropy(functional_call(model, p, (xb,)), yb)

    grad_all = vmap(grad(loss), randomness="different")
    for step in range(s["steps"]):
        xb, yb = x[:, step * b:(step + 1) * b], y[:, step * b:(step + 1) * b]
        g = grad_all(params, xb, yb)
        gs = clip_decay([g[n] for n in names], [params[n] for n in names], s)
        params = {n: params[n] - s["lr"] * gn for n, gn in zip(names, gs)}
    return [(params[n] - global_state[n]).mean(0) for n in names]


def setting(a):
    """The torch_models setting of the model, with the round's local keys."""
    s = dict(tm.SETTINGS[a.model])
    s.update(batch=a.batch, lr=a.lr, wd=a.wd, max_norm=a.max_norm, nar=a.nar, steps=a.steps)
    return s


def from_config(path, samples):
    """The round's keys from a fedrun spec."""
    with open(path, "rb") as f:
        c = tomllib.load(f)
    local, fl = c.get("local", {}), c.get("fl", {})
    batch = local.get("batch_size", 50)
    steps = local.get("steps", 20)
    if local.get("epochs", 0) > 0:
        steps = local["epochs"] * math.ceil(samples / batch)
    return dict(model=c.get("model", {}).get("kind", "cnn"), clients=fl.get("clients_per_round", 20),
                steps=steps, batch=batch, lr=local.get("lr", 0.01),
                wd=local.get("weight_decay", 0.05), max_norm=local.get("max_norm", 10.0),
                nar=local.get("nar", False))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", help="a fedrun spec whose round to time")
    p.add_argument("--samples", type=int, default=50,
                   help="a client's samples, for a spec with local.epochs")
    p.add_argument("--mode", choices=["loop", "vmap"], default="loop")
    p.add_argument("--model", choices=list(tm.SETTINGS))
    p.add_argument("--clients", type=int)
    p.add_argument("--steps", type=int)
    p.add_argument("--batch", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--wd", type=float)
    p.add_argument("--max-norm", type=float)
    p.add_argument("--nar", action="store_true", default=None)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a = p.parse_args(argv)
    base = from_config(a.config, a.samples) if a.config else dict(
        model="mlp", clients=50, steps=5, batch=10, lr=0.1, wd=0.0, max_norm=0.0, nar=False)
    for k, v in base.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    return a


def main(argv=None):
    a = parse_args(argv)
    torch.set_num_threads(a.threads)
    tm.DEVICE = torch.device(a.device)
    s = setting(a)
    torch.manual_seed(0)
    model = tm.build_model(a.model, s).to(a.device)
    global_state = {n: p.detach().clone() for n, p in model.state_dict().items()}
    x, y = data(s, a.clients, a.steps, a.device)
    run = round_loop if a.mode == "loop" else round_vmap
    times = []
    for rep in range(a.reps + 1):
        sync(a.device)
        t = time.perf_counter()
        delta = run(model, global_state, x, y, s)
        sync(a.device)
        dt = time.perf_counter() - t
        norm = math.sqrt(sum(float(d.pow(2).sum()) for d in delta))
        if rep > 0:  # the first is a warm-up
            times.append(dt)
        print(json.dumps({"rep": rep, "round_s": dt, "mean_update_norm": norm}))
    print(json.dumps({"summary": True, "mode": a.mode, "model": a.model, "clients": a.clients,
                      "steps": a.steps, "batch": a.batch, "threads": a.threads,
                      "device": a.device, "torch": torch.__version__,
                      "median_round_s": statistics.median(times),
                      # the caching allocator's peak, beside the device's memory in use
                      "torch_peak_bytes": torch.cuda.max_memory_allocated()
                      if a.device == "cuda" else None}))


if __name__ == "__main__":
    main()
