#!/usr/bin/env python3
"""PyTorch reference benchmark for federated learning on CIFAR-10.

FedAvg server (global learning rate 1) with the FedNAR local step, mirroring the
CIFAR-10 setup of the official FedNAR / FedExP code:

  * data: official CIFAR-10 binary files, normalised once and kept as float tensors;
  * partition: Dirichlet "equal" split (100 clients x 500 images, alpha 0.3) or IID;
  * models: the FedExP CNN (744,330 params) or the CIFAR ResNet-18 with GroupNorm
    (11,173,962 params);
  * local training: exactly K steps of batch B per client, batch-level crop/flip
    augmentation, global-norm gradient clipping at A = 10 and weight decay, either
    baseline  x <- x - l * (clip_A(g) + wd * x)
    or NAR    x <- x - l * clip_A(g + wd * x);
  * local lr l_t = lr * decay^(t+1) for round t = 0, 1, ...;
  * server: x <- x + server_lr * mean_i (x_i - x) over the sampled clients;
  * evaluation on the full 10k test set.

Every round prints one JSON line to stdout; the last line is a summary.
Only numpy and torch are needed.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CIFAR_MEAN = (0.491, 0.482, 0.447)
CIFAR_STD = (0.247, 0.243, 0.262)
NUM_CLASSES = 10
EXPECTED_PARAMS = {"cnn": 744_330, "resnet18": 11_173_962}
TRAIN_FILES = [f"data_batch_{i}.bin" for i in range(1, 6)]
TEST_FILE = "test_batch.bin"

# Settings that a --workload preset fills in when the option is not given.
WORKLOADS = {
    # FedNAR / FedExP CIFAR-10 setting (spec sections 1, 2.2, 2.4, 8.1, 8.3).
    "fednar": dict(
        model="cnn", partition="dirichlet", num_clients=100, alpha=0.3,
        clients_per_round=20, local_steps=20, local_epochs=None, batch_size=50,
        lr=0.01, lr_decay=0.998, wd=0.01, max_norm=10.0, augment=True,
        eval_every=1, rounds=3,
    ),
    # pfl-research CIFAR-10 benchmark shape: 1000 users x 50 images IID, cohort 50,
    # 1 local epoch of batch 10 (5 steps), constant local lr 0.1, plain SGD.
    "pfl": dict(
        model="cnn", partition="iid", num_clients=1000, alpha=0.3,
        clients_per_round=50, local_steps=None, local_epochs=1, batch_size=10,
        lr=0.1, lr_decay=1.0, wd=0.0, max_norm=0.0, augment=False,
        eval_every=10, rounds=3,
    ),
}


# --------------------------------------------------------------------------- data

def read_cifar_file(path):
    """One CIFAR-10 binary file -> (uint8 images [n,3,32,32], int64 labels [n])."""
    record = 1 + 3 * 32 * 32
    if not os.path.isfile(path):
        raise FileNotFoundError(f"CIFAR-10 file not found: {path}")
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % record != 0:
        raise ValueError(f"{path}: {raw.size} bytes is not a whole number of "
                         f"{record}-byte records")
    raw = raw.reshape(-1, record)
    labels = raw[:, 0].astype(np.int64)
    if labels.max() >= NUM_CLASSES:
        raise ValueError(f"{path}: label {labels.max()} out of range 0..9")
    return raw[:, 1:].reshape(-1, 3, 32, 32), labels


def normalise(images_u8):
    mean = np.asarray(CIFAR_MEAN, dtype=np.float32).reshape(1, 3, 1, 1)
    std = np.asarray(CIFAR_STD, dtype=np.float32).reshape(1, 3, 1, 1)
    x = images_u8.astype(np.float32)
    x /= np.float32(255.0)
    x -= mean
    x /= std
    return torch.from_numpy(np.ascontiguousarray(x))


def load_cifar10(data_dir):
    parts = [read_cifar_file(os.path.join(data_dir, f)) for f in TRAIN_FILES]
    train_u8 = np.concatenate([p[0] for p in parts])
    train_y = np.concatenate([p[1] for p in parts])
    test_u8, test_y = read_cifar_file(os.path.join(data_dir, TEST_FILE))
    return normalise(train_u8), train_y, normalise(test_u8), test_y


# ---------------------------------------------------------------------- partition

def partition_iid(num_samples, num_clients, rng):
    per_client = num_samples // num_clients
    if per_client == 0:
        raise ValueError(f"{num_clients} clients for {num_samples} samples")
    perm = rng.permutation(num_samples)
    return [perm[i * per_client:(i + 1) * per_client] for i in range(num_clients)]


def partition_dirichlet_equal(labels, num_clients, alpha, rng):
    """FedExP/FedNAR "equal" Dirichlet split (spec section 8.1).

    Every client gets floor(N / n) samples, drawn without replacement: repeatedly
    pick a client that is not yet full, pick a class from its Dirichlet prior and
    give it the next unused sample of that class (classes keep dataset order).
    The reference code redraws the client while it is full and redraws the class
    while it is exhausted; drawing directly from the not-full clients and from the
    prior restricted to the remaining classes has the same distribution and cannot
    loop forever when a client's prior has (almost) no mass left.
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    num_samples = len(labels)
    per_client = num_samples // num_clients
    if per_client == 0:
        raise ValueError(f"{num_clients} clients for {num_samples} samples")
    priors = rng.dirichlet(np.full(NUM_CLASSES, alpha), size=num_clients)
    class_idx = [np.flatnonzero(labels == k) for k in range(NUM_CLASSES)]
    remaining = np.array([len(c) for c in class_idx], dtype=np.int64)
    taken = np.zeros(NUM_CLASSES, dtype=np.int64)
    assigned = [[] for _ in range(num_clients)]
    open_clients = list(range(num_clients))
    for _ in range(per_client * num_clients):
        slot = int(rng.integers(len(open_clients)))
        c = open_clients[slot]
        cdf = np.cumsum(priors[c] * (remaining > 0))
        if cdf[-1] > 0:
            k = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
            if k >= NUM_CLASSES:  # u * total rounded up to total
                k = int(np.flatnonzero(remaining > 0)[-1])
        else:  # no prior mass left on any remaining class
            k = int(rng.choice(np.flatnonzero(remaining > 0)))
        assigned[c].append(class_idx[k][taken[k]])
        taken[k] += 1
        remaining[k] -= 1
        if len(assigned[c]) == per_client:
            open_clients[slot] = open_clients[-1]
            open_clients.pop()
    return [rng.permutation(np.asarray(a, dtype=np.int64)) for a in assigned]


# ------------------------------------------------------------------------- models

class FedExPCNN(nn.Module):
    """conv5x5 3->32, relu, pool2; conv5x5 32->64, relu, pool2; 1600-384-192-10."""

    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.fc1 = nn.Linear(64 * 5 * 5, 384)
        self.fc2 = nn.Linear(384, 192)
        self.fc3 = nn.Linear(192, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def group_norm(channels):
    return nn.GroupNorm(2, channels)


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.gn1 = group_norm(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.gn2 = group_norm(c_out)
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), group_norm(c_out))
        else:
            self.shortcut = nn.Identity()

    def forward(self, x):
        out = F.relu(self.gn1(self.conv1(x)))
        out = self.gn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18GN(nn.Module):
    """CIFAR ResNet-18: 3x3 stem without max-pool, GroupNorm(2) everywhere.

    head="fednar": avg_pool2d(kernel 3) on the 4x4 map, as in the FedNAR/FedExP
    code (only the top-left 3x3 window is used); head="global": global average pool.
    """

    def __init__(self, num_classes=NUM_CLASSES, head="fednar"):
        super().__init__()
        self.head = head
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.gn1 = group_norm(64)
        stages, c_in = [], 64
        for c_out, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            stages.append(nn.Sequential(BasicBlock(c_in, c_out, stride),
                                        BasicBlock(c_out, c_out, 1)))
            c_in = c_out
        self.layers = nn.Sequential(*stages)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = F.relu(self.gn1(self.conv1(x)))
        x = self.layers(x)
        if self.head == "fednar":
            x = F.avg_pool2d(x, 3)
        else:
            x = F.adaptive_avg_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))


def build_model(name, head):
    if name == "cnn":
        return FedExPCNN()
    if name == "resnet18":
        return ResNet18GN(head=head)
    raise ValueError(f"unknown model {name!r}")


class FlatParams:
    """Moves all parameters and their gradients of `model` into two flat buffers.

    Each parameter (and its .grad) becomes a view into one contiguous vector, with
    the parameter's own strides (so channels-last weights work too). Loading the
    global model, zeroing gradients, the global-norm clip, the SGD update and the
    server average are then a handful of whole-vector operations. Autograd
    accumulates into an existing .grad in place, so the views stay attached.
    """

    def __init__(self, model):
        params = list(model.parameters())
        self.numel = sum(p.numel() for p in params)
        device = params[0].device
        self.data = torch.empty(self.numel, device=device)
        self.grad = torch.zeros(self.numel, device=device)
        offset = 0
        with torch.no_grad():
            for p in params:
                dense = p.is_contiguous() or p.is_contiguous(
                    memory_format=torch.channels_last)
                if not dense:
                    raise ValueError("parameter is not densely laid out")
                view = self.data.as_strided(p.shape, p.stride(), offset)
                view.copy_(p)
                p.data = view
                p.grad = self.grad.as_strided(p.shape, p.stride(), offset)
                offset += p.numel()
        self._params = params

    def check_attached(self):
        base = self.grad.data_ptr()
        end = base + self.numel * self.grad.element_size()
        for p in self._params:
            if p.grad is None or not base <= p.grad.data_ptr() < end:
                raise RuntimeError("a gradient left the flat buffer")


# ----------------------------------------------------------------------- training

def local_step(flat, lr, wd, max_norm, nar):
    """One local step on the flat vectors; returns the pre-clip norm.

    baseline: x <- x - lr * (g * c + wd * x),       c = min(1, A / (|g| + 1e-6))
    NAR:      x <- x - lr * (g + wd * x) * c,       c = min(1, A / (|g + wd x| + 1e-6))
    """
    x, g = flat.data, flat.grad
    if nar and wd != 0.0:
        g.add_(x, alpha=wd)
    norm = float(torch.linalg.vector_norm(g))
    if max_norm > 0.0:
        coef = min(1.0, max_norm / (norm + 1e-6))
        if coef < 1.0:
            g.mul_(coef)
    if not nar and wd != 0.0:
        g.add_(x, alpha=wd)
    x.add_(g, alpha=-lr)
    return norm


def client_batches(indices, batch_size, steps, rng):
    """Exactly `steps` mini-batches from a shuffled pass over `indices`; reshuffle
    when exhausted; the last batch of a pass may be short (no drop_last)."""
    produced = 0
    while True:
        order = indices[rng.permutation(len(indices))]
        for start in range(0, len(order), batch_size):
            yield order[start:start + batch_size]
            produced += 1
            if produced == steps:
                return


def augment_batch(x, rng, pad=4):
    """RandomCrop(32, padding=4, zero fill in normalised space) + horizontal flip
    with p=0.5, one crop offset and one flip decision for the whole batch."""
    h, w = x.shape[-2:]
    i, j = (int(v) for v in rng.integers(0, 2 * pad + 1, size=2))
    flip = rng.random() < 0.5
    out = F.pad(x, (pad, pad, pad, pad))[:, :, i:i + h, j:j + w]
    if flip:
        out = out.flip(3)
    return out


def evaluate(model, test_x, test_y, batch_size, memory_format):
    model.eval()
    correct, loss_sum = 0, 0.0
    with torch.no_grad():
        for start in range(0, test_x.shape[0], batch_size):
            xb = test_x[start:start + batch_size].contiguous(memory_format=memory_format)
            yb = test_y[start:start + batch_size]
            out = model(xb)
            loss_sum += float(F.cross_entropy(out, yb, reduction="sum"))
            correct += int((out.argmax(1) == yb).sum())
    n = test_x.shape[0]
    return 100.0 * correct / n, loss_sum / n


def finite_or_none(v):
    return v if v is not None and math.isfinite(v) else None


def emit(record):
    print(json.dumps(record), flush=True)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- main

def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="PyTorch reference benchmark: FedAvg / FedNAR on CIFAR-10.")
    p.add_argument("--data-dir", default=os.path.join("data", "cifar10"),
                   help="directory with data_batch_1..5.bin and test_batch.bin "
                        "(default: data/cifar10)")
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="fednar",
                   help="preset for the options below that are not given")
    p.add_argument("--model", choices=["cnn", "resnet18"])
    p.add_argument("--head", choices=["fednar", "global"], default="fednar",
                   help="ResNet-18 head: avg_pool2d(3) as in FedNAR, or global pool")
    p.add_argument("--partition", choices=["dirichlet", "iid"])
    p.add_argument("--num-clients", type=int)
    p.add_argument("--alpha", type=float, help="Dirichlet concentration")
    p.add_argument("--rounds", type=int)
    p.add_argument("--clients-per-round", type=int)
    p.add_argument("--local-steps", type=int, help="local steps K per client")
    p.add_argument("--local-epochs", type=int,
                   help="instead of --local-steps: epochs over the client's data "
                        "(steps = epochs * ceil(n_client / batch))")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--lr", type=float, help="initial local learning rate")
    p.add_argument("--lr-decay", type=float, help="per-round local lr decay")
    p.add_argument("--server-lr", type=float, default=1.0)
    p.add_argument("--wd", type=float, help="weight decay")
    p.add_argument("--max-norm", type=float, help="clip threshold A; 0 = no clipping")
    p.add_argument("--nar", action="store_true",
                   help="FedNAR step: clip g + wd*x jointly")
    aug = p.add_mutually_exclusive_group()
    aug.add_argument("--augment", dest="augment", action="store_true", default=None)
    aug.add_argument("--no-augment", dest="augment", action="store_false")
    p.add_argument("--eval-every", type=int)
    p.add_argument("--eval-batch-size", type=int, default=500)
    p.add_argument("--no-eval", action="store_true", help="skip test evaluation")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--device", default="cpu",
                   help="torch device for model and data, e.g. cpu or cuda")
    p.add_argument("--channels-last", action="store_true",
                   help="channels-last memory format for model and inputs")
    args = p.parse_args(argv)
    preset = dict(WORKLOADS[args.workload])
    if args.local_steps is not None or args.local_epochs is not None:
        # An explicit amount of local work replaces the preset's (steps win over epochs).
        del preset["local_steps"], preset["local_epochs"]
    for key, value in preset.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.local_steps is not None and args.local_steps < 1:
        p.error("--local-steps must be >= 1")
    if args.local_epochs is not None and args.local_epochs < 1:
        p.error("--local-epochs must be >= 1")
    for key in ["num_clients", "rounds", "clients_per_round", "batch_size",
                "eval_every", "eval_batch_size", "threads"]:
        if getattr(args, key) < 1:
            p.error(f"--{key.replace('_', '-')} must be >= 1")
    if args.clients_per_round > args.num_clients:
        p.error("--clients-per-round exceeds --num-clients")
    return args


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    # Independent numpy streams: partition, client sampling, local batches/augmentation.
    part_rng, sample_rng, train_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(args.seed).spawn(3))
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format

    t0 = time.perf_counter()
    train_x, train_y_np, test_x, test_y_np = load_cifar10(args.data_dir)
    device = torch.device(args.device)
    train_x, test_x = train_x.to(device), test_x.to(device)
    train_y = torch.from_numpy(train_y_np).to(device)
    test_y = torch.from_numpy(test_y_np).to(device)
    if args.channels_last:
        test_x = test_x.contiguous(memory_format=torch.channels_last)
    t_data = time.perf_counter() - t0

    t0 = time.perf_counter()
    if args.partition == "iid":
        clients = partition_iid(len(train_y_np), args.num_clients, part_rng)
    else:
        clients = partition_dirichlet_equal(train_y_np, args.num_clients, args.alpha,
                                            part_rng)
    t_part = time.perf_counter() - t0

    model = build_model(args.model, args.head).to(device=device, memory_format=memory_format)
    num_params = sum(p.numel() for p in model.parameters())
    expected = EXPECTED_PARAMS[args.model]
    assert num_params == expected, f"{args.model}: {num_params} params, expected {expected}"
    flat = FlatParams(model)
    global_x = flat.data.clone()
    accum = torch.empty_like(global_x)

    def steps_for(n):
        if args.local_steps is not None:
            return args.local_steps
        return args.local_epochs * math.ceil(n / args.batch_size)

    log(f"threads={torch.get_num_threads()} model={args.model} params={num_params} "
        f"clients={args.num_clients} partition={args.partition} "
        f"data_load_s={t_data:.2f} partition_s={t_part:.2f}")

    records = []
    t_start = time.perf_counter()
    for t in range(args.rounds):
        t_round = time.perf_counter()
        lr = args.lr * args.lr_decay ** (t + 1)
        sampled = sample_rng.choice(args.num_clients, size=args.clients_per_round,
                                    replace=False)
        model.train()
        accum.zero_()
        loss_sum, steps, images, clipped, norm_sum = 0.0, 0, 0, 0, 0.0
        for c in sampled:
            flat.data.copy_(global_x)
            idx_all = clients[c]
            for idx in client_batches(idx_all, args.batch_size, steps_for(len(idx_all)),
                                      train_rng):
                idx_t = torch.from_numpy(idx).to(device)
                xb = train_x.index_select(0, idx_t)
                yb = train_y.index_select(0, idx_t)
                if args.augment:
                    xb = augment_batch(xb, train_rng)
                xb = xb.contiguous(memory_format=memory_format)
                flat.grad.zero_()
                loss = F.cross_entropy(model(xb), yb)
                loss.backward()
                norm = local_step(flat, lr, args.wd, args.max_norm, args.nar)
                loss_sum += loss.detach().item()
                norm_sum += norm
                clipped += int(args.max_norm > 0 and norm >= args.max_norm)
                steps += 1
                images += len(idx)
            accum.add_(flat.data)
        # FedAvg server with equal client weights: x <- x + eta_g * mean_i (x_i - x).
        accum.div_(len(sampled)).sub_(global_x)
        global_x.add_(accum, alpha=args.server_lr)
        train_s = time.perf_counter() - t_round
        if t == 0:
            flat.check_attached()

        test_acc = test_loss = None
        eval_s = 0.0
        last = t == args.rounds - 1
        if not args.no_eval and ((t + 1) % args.eval_every == 0 or last):
            t_eval = time.perf_counter()
            flat.data.copy_(global_x)
            test_acc, test_loss = evaluate(model, test_x, test_y, args.eval_batch_size,
                                           memory_format)
            eval_s = time.perf_counter() - t_eval
        round_s = time.perf_counter() - t_round
        rec = {
            "round": t,
            "lr": lr,
            "test_acc": finite_or_none(test_acc),
            "test_loss": finite_or_none(test_loss),
            "train_loss": finite_or_none(loss_sum / steps),
            "clipped_steps": clipped,
            "total_local_steps": steps,
            "mean_clip_norm": finite_or_none(norm_sum / steps),
            "round_s": round(round_s, 4),
            "train_s": round(train_s, 4),
            "eval_s": round(eval_s, 4),
            "train_images_per_s": round(images / train_s, 1),
        }
        records.append(rec)
        emit(rec)
        if not math.isfinite(loss_sum):
            log(f"diverged: non-finite training loss in round {t}")
            break

    evals = [r for r in records if r["test_acc"] is not None]
    emit({
        "summary": True,
        "rounds": len(records),
        "median_round_s": round(statistics.median(r["round_s"] for r in records), 4),
        "median_train_s": round(statistics.median(r["train_s"] for r in records), 4),
        "median_eval_s": (round(statistics.median(r["eval_s"] for r in evals), 4)
                          if evals else None),
        "median_train_images_per_s": round(
            statistics.median(r["train_images_per_s"] for r in records), 1),
        "final_test_acc": evals[-1]["test_acc"] if evals else None,
        "best_test_acc": max((r["test_acc"] for r in evals), default=None),
        "total_s": round(time.perf_counter() - t_start, 2),
        "config": {
            "workload": args.workload, "model": args.model, "head": args.head,
            "params": num_params, "partition": args.partition,
            "num_clients": args.num_clients, "alpha": args.alpha,
            "clients_per_round": args.clients_per_round,
            "local_steps": args.local_steps, "local_epochs": args.local_epochs,
            "batch_size": args.batch_size, "lr": args.lr, "lr_decay": args.lr_decay,
            "server_lr": args.server_lr, "wd": args.wd, "max_norm": args.max_norm,
            "nar": args.nar, "augment": args.augment, "seed": args.seed,
            "threads": torch.get_num_threads(), "channels_last": args.channels_last,
            "torch": torch.__version__,
        },
    })


if __name__ == "__main__":
    main()
