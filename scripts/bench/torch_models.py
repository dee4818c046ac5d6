#!/usr/bin/env python3
"""PyTorch timing reference for every model fedrun has: one client's local steps and a
test-set evaluation, in each model's paper setting, on random inputs of the model's shape.

What is timed (the same as `fedrun bench --workload model --model NAME --steps 20 --rounds 3`):

  * one client, one epoch of K = --steps local steps of the model's batch, taken in order
    from a pool of K x batch random training samples held in memory (normal pixels, or
    token ids in [0, 80), uniform labels), all generated before timing;
  * a step: forward in train mode, mean cross-entropy, backward, then
      baseline  x <- x - lr * (clip_A(g) + wd * x)
      FedNAR    x <- x - lr * clip_A(g + wd * x)
    with clip_A the global-norm clip of torch.nn.utils.clip_grad_norm_ (none when A = 0);
  * an evaluation: eval mode under torch.inference_mode, over test_n random samples in
    chunks of eval_batch, computing accuracy and mean loss.

Models and settings mirror fedrun's definitions layer for layer; each model's parameter
count is asserted against fedrun's: the FedExP CNN and the CIFAR ResNet-18 with GroupNorm
(FedNAR / FedExP setting, FedNAR local step), the Fed-LAMB MNIST CNN and MLP, the FedNAR
Shakespeare transformer and a small one, the LEAF Shakespeare LSTM and FedDyn's smaller
one, and the LEAF FEMNIST and CelebA CNNs (in FedACG's local setting).

Warm-up: 2 steps and one evaluation chunk, untimed (fedrun warms up with one whole
untimed round). Then --reps repetitions, each of --steps steps timed as a whole and one
evaluation; one JSON line per repetition and a summary line on stdout.

Install (outside the project; about 7 GB with the CUDA wheels):
    python3 -m venv torchenv && torchenv/bin/pip install torch==2.9.0 numpy
Run:
    torchenv/bin/python scripts/bench/torch_models.py --model cnn --steps 20 --reps 3 --threads 2
    torchenv/bin/python scripts/bench/torch_models.py --all --steps 20 --reps 3
Only torch is needed (numpy is installed beside it to keep torch quiet). Everything runs
on the CPU unless --device cuda: then the model, the pool and the test set live on the GPU
(the pool is sliced there, no host transfer per step), the optimizer and the clip use
PyTorch's default (foreach) CUDA kernels, and the clock is read after
torch.cuda.synchronize(). The loss is read back every step (.item()), as fedrun reads its
loss and norm.
    python3 scripts/bench/torch_models.py --all --device cuda --steps 20 --reps 3
"""

import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn

DEVICE = torch.device("cpu")  # --device; set once in main()


def sync():
    """Wait for the device's queued work (CUDA is asynchronous); nothing on the CPU."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def foreach_flag():
    """foreach for the optimizer and the clip: False on the CPU (see make_optimizer), PyTorch's
    default (None: the fused multi-tensor kernels) on CUDA."""
    return None if DEVICE.type == "cuda" else False

import torch.nn.functional as F

SEQ_LEN = 80  # Shakespeare: 80 characters in, the next one out
VOCAB = 80

# Parameter counts of fedrun's models (`fedrun bench` prints them on stderr).
EXPECTED_PARAMS = {
    "cnn": 744_330,
    "resnet18": 11_173_962,
    "mnist-cnn": 21_840,
    "mlp": 159_010,
    "transformer": 1_220_432,
    "transformer-small": 115_408,
    "lstm": 819_920,
    "lstm-small": 133_520,
    "femnist-cnn": 6_603_710,
    "celeba-cnn": 31_202,
}

# One row per --model NAME; fedrun's src/cli/bench_models.rs holds the identical table.
# image: (c, h, w) or None for 80 Shakespeare characters.
SETTINGS = {
    "cnn": dict(image=(3, 32, 32), classes=10, batch=50, lr=0.01, wd=0.01,
                max_norm=10.0, nar=True, test=10_000, eval_batch=500),
    "resnet18": dict(image=(3, 32, 32), classes=10, batch=50, lr=0.01, wd=0.01,
                     max_norm=10.0, nar=True, test=10_000, eval_batch=500),
    "mnist-cnn": dict(image=(1, 28, 28), classes=10, batch=128, lr=0.01, wd=0.0,
                      max_norm=0.0, nar=False, test=10_000, eval_batch=500, dropout=0.5),
    "mlp": dict(image=(1, 28, 28), classes=10, batch=128, lr=0.1, wd=0.0,
                max_norm=0.0, nar=False, test=10_000, eval_batch=500),
    "transformer": dict(image=None, classes=VOCAB, batch=100, lr=0.1, wd=1e-4,
                        max_norm=10.0, nar=False, test=4_000, eval_batch=1_000,
                        layers=6, d_model=128, heads=4, d_ff=512, dropout=0.1),
    "transformer-small": dict(image=None, classes=VOCAB, batch=25, lr=0.5, wd=1e-4,
                              max_norm=10.0, nar=True, test=2_000, eval_batch=1_000,
                              layers=2, d_model=64, heads=4, d_ff=256, dropout=0.0),
    "lstm": dict(image=None, classes=VOCAB, batch=50, lr=0.1, wd=1e-3, max_norm=10.0,
                 nar=False, test=4_000, eval_batch=1_000, hidden=256),
    "lstm-small": dict(image=None, classes=VOCAB, batch=50, lr=0.1, wd=1e-3,
                       max_norm=10.0, nar=False, test=4_000, eval_batch=1_000, hidden=100),
    "femnist-cnn": dict(image=(1, 28, 28), classes=62, batch=50, lr=0.1, wd=1e-3,
                        max_norm=10.0, nar=False, test=4_000, eval_batch=500),
    "celeba-cnn": dict(image=(3, 84, 84), classes=2, batch=50, lr=0.1, wd=1e-3,
                       max_norm=10.0, nar=False, test=4_000, eval_batch=500),
}

# The image models with convolutions: the only ones --channels-last applies to.
CONV_MODELS = ("cnn", "resnet18", "mnist-cnn", "femnist-cnn", "celeba-cnn")


# ----------------------------------------------------------------------------- models


class FedExpCnn(nn.Module):
    """FedExP CNN: conv5x5 3->32 -> ReLU -> maxpool2 -> conv5x5 32->64 -> ReLU -> maxpool2
    -> 1600 -> 384 -> ReLU -> 192 -> ReLU -> classes (no padding)."""

    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.fc1 = nn.Linear(64 * 5 * 5, 384)
        self.fc2 = nn.Linear(384, 192)
        self.fc3 = nn.Linear(192, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def group_norm(c):
    """fedrun's ResNet-18 norm: GroupNorm with 2 groups (eps 1e-5, affine)."""
    return nn.GroupNorm(2, c)


class BasicBlock(nn.Module):
    """conv3x3 -> GN -> ReLU -> conv3x3 -> GN, plus the shortcut (1x1 conv -> GN when the
    stride or width changes), -> ReLU. Convolutions without bias."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.gn1 = group_norm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.gn2 = group_norm(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), group_norm(cout))

    def forward(self, x):
        y = F.relu(self.gn1(self.conv1(x)))
        y = self.gn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class ResNet18(nn.Module):
    """CIFAR ResNet-18: 3x3 stride-1 stem (no max-pool), blocks [2, 2, 2, 2] of widths
    64/128/256/512, FedNAR head avg_pool2d(3) on the 4x4 map (top-left 3x3 window)."""

    def __init__(self, classes):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.stem_gn = group_norm(64)
        blocks, cin = [], 64
        for i, w in enumerate((64, 128, 256, 512)):
            blocks += [BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w, 1)]
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.blocks(F.relu(self.stem_gn(self.stem(x))))
        return self.fc(torch.flatten(F.avg_pool2d(x, 3), 1))


class MnistCnn(nn.Module):
    """Fed-LAMB MNIST CNN (the PyTorch MNIST example net): conv5x5 1->10 -> maxpool2 ->
    ReLU; conv5x5 10->20 -> Dropout2d -> maxpool2 -> ReLU; 320 -> 50 -> ReLU -> dropout
    -> classes."""

    def __init__(self, classes, dropout):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, 5)
        self.conv2 = nn.Conv2d(10, 20, 5)
        self.conv2_drop = nn.Dropout2d(dropout)
        self.drop = nn.Dropout(dropout)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, classes)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = self.drop(F.relu(self.fc1(torch.flatten(x, 1))))
        return self.fc2(x)


class Mlp(nn.Module):
    """Fed-LAMB MNIST MLP: flattened 784 -> 200 -> ReLU -> classes."""

    def __init__(self, inputs, hidden, classes):
        super().__init__()
        self.fc1 = nn.Linear(inputs, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class FemnistCnn(nn.Module):
    """LEAF FEMNIST CNN: conv5x5 1->32 'same' -> ReLU -> maxpool2; conv5x5 32->64 'same'
    -> ReLU -> maxpool2; 3136 -> 2048 -> ReLU -> classes."""

    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(7 * 7 * 64, 2048)
        self.fc2 = nn.Linear(2048, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def batch_stat_norm(c):
    """LEAF's CelebA batch norm (tf.layers.batch_normalization(training=True)): always the
    batch's own mean and biased variance, eps 1e-3, learned gamma and beta, no running
    statistics (so evaluation normalises each chunk with its own statistics too)."""
    return nn.BatchNorm2d(c, eps=1e-3, momentum=None, track_running_stats=False)


class CelebaCnn(nn.Module):
    """LEAF CelebA CNN: 4 x [conv3x3 ->32 'same' -> batch norm -> maxpool2 'same' -> ReLU];
    84 -> 42 -> 21 -> 11 -> 6; 6*6*32 -> classes. TF's 'same' pooling of stride 2 is
    ceil(side/2) windows, the last one partial: ceil_mode=True."""

    def __init__(self, classes):
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv2d(3 if i == 0 else 32, 32, 3, padding=1) for i in range(4))
        self.norms = nn.ModuleList(batch_stat_norm(32) for _ in range(4))
        self.fc = nn.Linear(6 * 6 * 32, classes)

    def forward(self, x):
        for conv, norm in zip(self.convs, self.norms):
            x = F.relu(F.max_pool2d(norm(conv(x)), 2, ceil_mode=True))
        return self.fc(torch.flatten(x, 1))


class CharTransformer(nn.Module):
    """FedNAR Shakespeare transformer: token embedding * sqrt(d) plus a learned positional
    embedding, post-LN encoder layers (ReLU FFN, dropout on the attention weights, inside
    the FFN and on both residual branches), prediction from the last position. No final
    norm, no dropout on the embeddings."""

    def __init__(self, s):
        super().__init__()
        d = s["d_model"]
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(SEQ_LEN, d)
        layer = nn.TransformerEncoderLayer(
            d, s["heads"], s["d_ff"], s["dropout"], activation="relu",
            batch_first=True, norm_first=False)
        # deep copies of one layer: identical initial layers, as fedrun's identical_layers
        self.encoder = nn.TransformerEncoder(layer, s["layers"], enable_nested_tensor=False)
        self.out = nn.Linear(d, s["classes"])
        self.scale = math.sqrt(d)
        self.register_buffer("positions", torch.arange(SEQ_LEN), persistent=False)

    def forward(self, x):
        h = self.tok(x) * self.scale + self.pos(self.positions[: x.shape[1]])
        return self.out(self.encoder(h)[:, -1])


class CharLstm(nn.Module):
    """Shakespeare LSTM: Embedding(80, 8) -> 2 stacked LSTM layers (two biases per gate)
    -> Linear on the last output. Hidden 256: LEAF's reference; hidden 100: FedDyn's."""

    def __init__(self, hidden, classes, d_emb=8, layers=2):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d_emb)
        self.lstm = nn.LSTM(d_emb, hidden, num_layers=layers, batch_first=True)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.out(h[:, -1])


def build_model(name, s):
    """The model of --model NAME for its setting's input and classes."""
    classes = s["classes"]
    if name == "cnn":
        return FedExpCnn(classes)
    if name == "resnet18":
        return ResNet18(classes)
    if name == "mnist-cnn":
        return MnistCnn(classes, s["dropout"])
    if name == "mlp":
        c, h, w = s["image"]
        return Mlp(c * h * w, 200, classes)
    if name.startswith("transformer"):
        return CharTransformer(s)
    if name.startswith("lstm"):
        return CharLstm(s["hidden"], classes)
    if name == "femnist-cnn":
        return FemnistCnn(classes)
    if name == "celeba-cnn":
        return CelebaCnn(classes)
    raise ValueError(f"unknown model {name!r}")


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def check_params(name, model):
    """Fail loudly when the PyTorch model is not fedrun's (parameter count)."""
    n = count_params(model)
    if n != EXPECTED_PARAMS[name]:
        raise AssertionError(
            f"{name}: {n:,} parameters in PyTorch, fedrun has {EXPECTED_PARAMS[name]:,}")
    return n


# ----------------------------------------------------------------------------- data


def random_split(s, n, gen):
    """n random samples of the setting's shape: normal pixels or token ids in [0, 80),
    uniform labels."""
    if s["image"] is not None:
        x = torch.randn((n, *s["image"]), generator=gen)
    else:
        x = torch.randint(0, VOCAB, (n, SEQ_LEN), generator=gen)
    y = torch.randint(0, s["classes"], (n,), generator=gen)
    return x, y


def make_data(s, steps, channels_last):
    """The client's pool (steps x batch samples, one epoch in order) and the test set."""
    gen = torch.Generator().manual_seed(0)
    train = random_split(s, steps * s["batch"], gen)
    test = random_split(s, s["test"], gen)
    if channels_last:
        cl = torch.channels_last
        train = (train[0].contiguous(memory_format=cl), train[1])
        test = (test[0].contiguous(memory_format=cl), test[1])
    to = lambda xy: (xy[0].to(DEVICE), xy[1].to(DEVICE))  # noqa: E731
    return to(train), to(test)


# ----------------------------------------------------------------------------- step


def make_optimizer(model, s):
    """Plain SGD (momentum 0). Baseline: SGD's coupled weight decay after the clip, i.e.
    x <- x - lr (clip(g) + wd x). FedNAR: weight decay 0 here, added to g before the clip
    in `update`. foreach=False (here and in clip_grad_norm_): on the CPU torch's default
    (foreach=None) resolves to this per-tensor loop anyway, as foreach kernels are chosen
    only for CUDA/XPU tensors; explicit so the choice cannot change between versions."""
    wd = 0.0 if s["nar"] else s["wd"]
    return torch.optim.SGD(model.parameters(), lr=s["lr"], momentum=0.0,
                           weight_decay=wd, foreach=foreach_flag())


def update(params, opt, s):
    """The step after backward: (FedNAR: g <- g + wd x), global-norm clip, SGD."""
    if s["nar"] and s["wd"] != 0.0:
        with torch.no_grad():
            for p in params:
                if p.grad is not None:
                    p.grad.add_(p, alpha=s["wd"])
    if s["max_norm"] > 0.0:
        torch.nn.utils.clip_grad_norm_(params, s["max_norm"], foreach=foreach_flag())
    opt.step()


def train_steps(model, opt, pool, s, first, count):
    """`count` local steps on the pool's batches first, first+1, ...; the summed loss."""
    params = [p for p in model.parameters()]
    x, y = pool
    b = s["batch"]
    loss_sum = 0.0
    model.train()
    for k in range(first, first + count):
        xb, yb = x[k * b:(k + 1) * b], y[k * b:(k + 1) * b]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        update(params, opt, s)
        loss_sum += loss.item()
    return loss_sum


def evaluate(model, test, eval_batch, chunks=None):
    """Accuracy and mean loss in eval mode under inference_mode, in eval_batch chunks
    (only the first `chunks` of them when given: the warm-up)."""
    x, y = test
    n = x.shape[0] if chunks is None else min(x.shape[0], chunks * eval_batch)
    correct, loss_sum = 0, 0.0
    model.eval()
    with torch.inference_mode():
        for i in range(0, n, eval_batch):
            logits = model(x[i:i + eval_batch])
            yb = y[i:i + eval_batch]
            loss_sum += F.cross_entropy(logits, yb, reduction="sum").item()
            correct += (logits.argmax(dim=1) == yb).sum().item()
    model.train()
    return correct / n, loss_sum / n


# ----------------------------------------------------------------------------- timing


def emit(record):
    print(json.dumps(record), flush=True)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def device_name():
    """The CPU, or the CUDA device's name."""
    if DEVICE.type == "cuda":
        return torch.cuda.get_device_name(DEVICE)
    return "cpu"


def setting_name(args):
    parts = (["compile"] if args.compile else []) + (
        ["channels-last"] if args.channels_last else [])
    return "+".join(parts) or "default"


def prepare(name, s, args):
    """The model (parameter count checked), what runs it (compiled or not), its optimizer."""
    torch.manual_seed(0)
    model = build_model(name, s)
    params = check_params(name, model)
    model = model.to(DEVICE)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = make_optimizer(model, s)
    runner = torch.compile(model) if args.compile else model
    return runner, opt, params


def time_reps(name, s, runner, opt, data, meta, args):
    """--reps repetitions of --steps timed steps and one timed evaluation; JSON lines."""
    pool, test = data
    step_s, eval_s = [], []
    for r in range(args.reps):
        sync()
        t0 = time.perf_counter()
        loss_sum = train_steps(runner, opt, pool, s, 0, args.steps)
        sync()
        step = (time.perf_counter() - t0) / args.steps
        acc = loss = ev = None
        if not args.no_eval:
            t1 = time.perf_counter()
            acc, loss = evaluate(runner, test, s["eval_batch"])
            sync()
            ev = time.perf_counter() - t1
            eval_s.append(ev)
        step_s.append(step)
        emit({"model": name, "rep": r, "step_s": step,
              "train_samples_per_s": s["batch"] / step, "eval_s": ev,
              "eval_samples_per_s": None if ev is None else s["test"] / ev,
              "train_loss": loss_sum / args.steps, "test_acc": acc, "test_loss": loss,
              **meta})
    return step_s, eval_s


def run_model(name, args):
    """Warm up, time and report one model; the exit code (3: torch.compile failed)."""
    s = SETTINGS[name]
    runner, opt, params = prepare(name, s, args)
    meta = {"threads": torch.get_num_threads(), "setting": setting_name(args),
            "device": device_name(),
            "params": params}
    log(f"model {name}: {params} parameters, threads={meta['threads']}, "
        f"setting={meta['setting']}, batch={s['batch']}, test={s['test']}")
    data = make_data(s, args.steps, args.channels_last)
    try:
        train_steps(runner, opt, data[0], s, 0, min(2, args.steps))
        if not args.no_eval:
            evaluate(runner, data[1], s["eval_batch"], chunks=1)
        step_s, eval_s = time_reps(name, s, runner, opt, data, meta, args)
    except Exception as e:  # noqa: BLE001 - only torch.compile's failures are reported
        if not args.compile:
            raise
        emit({"error": f"torch.compile failed for {name}: {type(e).__name__}: {e}",
              "model": name, "setting": meta["setting"]})
        return 3
    emit({"summary": True, "model": name, "median_step_s": statistics.median(step_s),
          "median_eval_s": statistics.median(eval_s) if eval_s else None,
          "params": params, "threads": meta["threads"], "setting": meta["setting"],
          "batch": s["batch"], "test": s["test"], "torch": torch.__version__,
          "device": meta["device"]})
    return 0


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Time each fedrun model's local step and evaluation in PyTorch "
        "(the reference for `fedrun bench --workload model --model NAME`).")
    p.add_argument("--model", choices=list(SETTINGS), help="the model to time")
    p.add_argument("--all", action="store_true", help="time every model in turn")
    p.add_argument("--steps", type=int, default=20, help="local steps per repetition")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions")
    p.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    p.add_argument("--channels-last", action="store_true",
                   help="NHWC weights and inputs (convolutional image models only)")
    p.add_argument("--compile", action="store_true", help="wrap the model in torch.compile")
    p.add_argument("--no-eval", action="store_true", help="skip the test evaluation")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="where the model, its data and its steps run")
    args = p.parse_args(argv)
    if args.all == (args.model is not None):
        p.error("give exactly one of --model NAME and --all")
    if args.steps < 1 or args.reps < 1 or args.threads < 1:
        p.error("--steps, --reps and --threads must be at least 1")
    return args


def models_to_run(args):
    """The models of this invocation; None (exit 2) when --channels-last does not apply."""
    names = list(SETTINGS) if args.all else [args.model]
    if not args.channels_last:
        return names
    others = [n for n in names if n not in CONV_MODELS]
    if not args.all and others:
        log(f"--channels-last applies only to the convolutional image models "
            f"({', '.join(CONV_MODELS)}), not to {args.model}")
        return None
    if others:
        log(f"--channels-last: skipping {', '.join(others)} (no convolutions)")
    return [n for n in names if n in CONV_MODELS]


def main(argv=None):
    args = parse_args(argv)
    names = models_to_run(args)
    if names is None:
        return 2
    global DEVICE
    if args.device == "cuda" and not torch.cuda.is_available():
        log("--device cuda: this torch sees no CUDA device")
        return 2
    DEVICE = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    for name in names:
        code = run_model(name, args)
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
