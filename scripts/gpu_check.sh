#!/usr/bin/env bash
# fedrun on a machine with an NVIDIA GPU: the one command to run there.
#
# Written for a machine with the NVIDIA driver and PyTorch with CUDA but no network and no Rust
# toolchain: it takes fedrun binaries built elsewhere with the GPU features, one per backend.
#
#   cargo build --release --features gpu       # cuda, vulkan, fusion, compiled kernels kept
#   cp target/release/fedrun fedrun-gpu && strip fedrun-gpu
#   scripts/gpu_check.sh --cohort 50 cuda,vulkan=fedrun-gpu        # on the GPU machine
# Without a GPU it runs end to end on lavapipe with a `--features wgpu,cuda,fusion` build (fewer
# steps; a build with `vulkan` crashes lavapipe when it compiles the wgpu backend's SPIR-V):
#   scripts/gpu_check.sh --steps 2 --reps 1 --models mlp,lstm-small --agree fedavg wgpu=fedrun
#
# What it does, in this order, each part with a time limit so that the whole stays under
# about 8 minutes (--budget SECONDS):
#   1. prints the GPU, its driver and the Vulkan loader;
#   2. PyTorch on CUDA: scripts/bench/torch_models.py --device cuda, every model;
#   3. the agreement check: two rounds of the embedded quickstart (2 clients of 3 steps each)
#      on flex and on each GPU backend, for one algorithm of each family (--agree a,b,c;
#      default fedavg, fedprox, scaffold, fedacg, feddyn, fedcm, fedadam, fedlamb, mime);
#      test_loss and train_loss must agree to 1e-3 (relative);
#   4. `fedrun bench --workload model` for every model on each backend (random inputs, so no
#      data set has to travel): its step and evaluation, the kernels each launches, and its cold
#      start (the first process of a model on an empty cache: start to the end of its first
#      round); then a second, short process of each model (--no-second leaves it out), whose start
#      is what a machine pays once it has compiled (and, with autotune, tuned) that model;
#      then (--no-carry leaves it out) `fedrun tune --export` of the quickstart's kernels, their
#      `--import` into an empty cache, and a one-round quickstart timed on it;
#   5. writes gpu_check.json and gpu_check.md (fedrun / PyTorch per model, step and
#      evaluation) into --out (default: gpu_check/), and prints the table.
# A binary may serve several backends (`vulkan,wgpu=PATH`); a backend given twice (two builds,
# `vulkan=A vulkan=B`) is labelled the second time with its binary's name (`vulkan-B`).
# --models a,b,c limits the models (default: all); --only-models M limits them for the backends
# after the first; --per-model S caps each fedrun process (default 90 s).
# --tune a,b,c: after a backend's benches, `fedrun bench --workload tune` of each of these
# models twice (list models here that --models leaves out, so that their kernels are untuned):
# the first time is the model's tuning, the second what a run pays once the machine has tuned
# it (needs a binary built with `autotune`; tune.jsonl, and a table of its own). burn's tuning
# cache starts empty for the whole check (XDG_CACHE_HOME=$out/cache). --cache DIR: keep burn's
# tuning cache in DIR as it is (a machine's earlier tuning) instead of an empty $out/cache.
# --cohort K: after a backend's benches, the cohort rounds (--cohort-rounds, default all four:
# w2-cnn, the W2 round of 50 clients × 5 steps of batch 10 of the CIFAR CNN; resnet18, 10
# clients × 5 steps of batch 50 of the FedNAR CIFAR ResNet-18 setting; lstm-small and
# transformer-small, 10 clients × 5 steps of batch 50 of the small LSTM and of the quickstart's
# transformer on the quickstart's Shakespeare) with one client at a time
# and with `run.cohort = K` (at most the round's clients), beside scripts/bench/torch_round.py's
# per-client loop and torch.func vmap on CUDA on inputs of the same shape (cohort.jsonl, and a
# table of its own).
# --graph a,b,c: the captured step (`run.graph`; `auto` captures on cuda) against the eager one:
# for each algorithm listed, one round of the quickstart with 20 local steps of 2 clients with
# `run.graph = "on"` and `"off"` on the backend (train_loss, test_loss and update_norm must agree
# to 1e-6, relative; graph.txt); and each model's bench again with `run.graph = "off"` (the
# backend labelled `B eager` in the table), so that the table shows both.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="gpu_check"
budget=480
steps=20
reps=3
all_models="cnn,resnet18,mnist-cnn,mlp,transformer,transformer-small,lstm,lstm-small,femnist-cnn,celeba-cnn"
models="$all_models"
per_model=90
later_models=""
tune_models=""
agree_algorithms="fedavg,fedprox,scaffold,fedacg,feddyn,fedcm,fedadam,fedlamb,mime"
cache=""
cohort=""
cohort_list="w2-cnn,resnet18,lstm-small,transformer-small"
graph_algorithms=""
second=1
carry=1
pairs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$2"; shift 2 ;;
        --budget) budget="$2"; shift 2 ;;
        --steps) steps="$2"; shift 2 ;;
        --reps) reps="$2"; shift 2 ;;
        --models) models="$2"; shift 2 ;;
        --per-model) per_model="$2"; shift 2 ;;
        --only-models) later_models="$2"; shift 2 ;;
        --tune) tune_models="$2"; shift 2 ;;
        --cache) cache="$2"; shift 2 ;;
        --agree) agree_algorithms="$2"; shift 2 ;;
        --cohort) cohort="$2"; shift 2 ;;
        --cohort-rounds) cohort_list="$2"; shift 2 ;;
        --graph) graph_algorithms="$2"; shift 2 ;;
        --no-second) second=0; shift ;;
        --no-carry) carry=0; shift ;;
        -h|--help) sed -n 2,52p "$0"; exit 0 ;;
        *=*) pairs+=("$1"); shift ;;
        *) echo "gpu_check: unknown argument '$1' (expected BACKEND=BINARY or an option; --help)" >&2; exit 2 ;;
    esac
done
if [ ${#pairs[@]} -eq 0 ]; then
    echo "gpu_check: give at least one BACKEND=BINARY (vulkan=PATH, wgpu=PATH); --help" >&2
    exit 2
fi
mkdir -p "$out/logs"
# burn's tuning cache (binaries built with `autotune`) starts empty and stays with the results.
if [ -z "$cache" ]; then cache="$out/cache"; rm -rf "$cache"; fi
mkdir -p "$cache"
XDG_CACHE_HOME="$(cd "$cache" && pwd)"
export XDG_CACHE_HOME
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
py=python3

# --- 1. the machine -------------------------------------------------------------------
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "vulkan loader: $(ldconfig -p | grep -m1 'libvulkan.so.1' | awk '{print $NF}')"
    $py -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} | tee "$out/machine.txt"
if ! ldconfig -p | grep -q libvulkan.so.1; then
    echo "gpu_check: no Vulkan loader (libvulkan.so.1): install Debian's libvulkan1; the GPU backends need it" >&2
fi
# The NVIDIA ICD where the driver's folder holds it and nothing else names one.
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ]; then export VK_DRIVER_FILES="$icd"; fi

# --- 2. PyTorch on CUDA ------------------------------------------------------------------
: > "$out/torch.jsonl"
t=$(left)
# Every model in one process (the import and CUDA start are paid once), whatever --models says.
timeout $(( t < 180 ? t : 180 )) $py "$here/bench/torch_models.py" --all --device cuda \
    --steps "$steps" --reps "$reps" 2>>"$out/logs/torch.err" | grep '"summary"' >> "$out/torch.jsonl" \
    || echo "torch: failed or timed out (logs/torch.err)"

# A cohort round's fedrun bench arguments (one a line; generated data of the real shape).
cohort_fedrun() {
    local root="$here/.."
    case "$1" in
        w2-cnn) printf '%s\n' bench --workload w2 --rounds 5 --no-eval \
            --set 'data.dataset="synthetic"' --set data.synthetic_train=50 --set data.synthetic_test=1000 ;;
        resnet18) printf '%s\n' bench --workload round --config "$root/configs/cifar_fednar.toml" \
            --rounds 3 --no-eval --set 'model.kind="resnet18"' --set 'data.dataset="synthetic"' \
            --set 'data.partition="iid"' --set data.num_clients=10 --set data.synthetic_train=500 \
            --set data.synthetic_test=1000 --set fl.clients_per_round=10 --set local.steps=5 ;;
        lstm-small) printf '%s\n' bench --workload round --config "$root/configs/quickstart.toml" \
            --rounds 3 --no-eval --set 'model.kind="lstm-small"' --set fl.clients_per_round=10 \
            --set local.steps=5 --set local.batch_size=50 ;;
        transformer-small) printf '%s\n' bench --workload round --config "$root/configs/quickstart.toml" \
            --rounds 3 --no-eval --set fl.clients_per_round=10 --set local.steps=5 --set local.batch_size=50 ;;
        *) return 1 ;;
    esac
}
# The same round's torch_round.py arguments, and its clients.
cohort_torch() {
    case "$1" in
        w2-cnn) echo --model cnn --clients 50 --steps 5 --batch 10 --lr 0.1 --wd 0 --max-norm 0 ;;
        resnet18) echo --model resnet18 --clients 10 --steps 5 --batch 50 --lr 0.01 --wd 0.05 --max-norm 10 --nar ;;
        lstm-small) echo --model lstm-small --clients 10 --steps 5 --batch 50 --lr 0.5 --wd 1e-4 --max-norm 10 ;;
        transformer-small) echo --model transformer-small --clients 10 --steps 5 --batch 50 --lr 0.5 --wd 1e-4 --max-norm 10 ;;
    esac
}
cohort_clients() { case "$1" in w2-cnn) echo 50 ;; *) echo 10 ;; esac; }

# PyTorch's cohort rounds, its per-client loop and torch.func vmap, with PyTorch's other
# timings: before fedrun's, so that a budget spent on fedrun's cold starts leaves them standing.
: > "$out/cohort.jsonl"
if [ -n "$cohort" ]; then
    for s in ${cohort_list//,/ }; do
        for mode in loop vmap; do
            t=$(left); [ "$t" -gt 20 ] || break
            # shellcheck disable=SC2046 # the round's arguments, word by word
            timeout $(( t < 120 ? t : 120 )) $py "$here/bench/torch_round.py" $(cohort_torch "$s") \
                --mode "$mode" --device cuda 2>>"$out/logs/torch_round.err" | grep '"summary"' \
                | sed "s/^{/{\"who\":\"PyTorch $mode\",\"round\":\"$s\",/" >> "$out/cohort.jsonl" \
                || echo "torch_round $s $mode: failed or timed out (logs/torch_round.err)"
        done
    done
fi

# The cohort rounds, one client at a time and as one cohort, on backend $1 (binary $2, label $3).
cohort_rounds() {
    local s k t args
    for s in ${cohort_list//,/ }; do
        mapfile -t args < <(cohort_fedrun "$s") || { echo "cohort: unknown round '$s'"; continue; }
        k=$(cohort_clients "$s"); [ "$cohort" -lt "$k" ] && k="$cohort"
        for kk in 1 "$k"; do
            t=$(left); [ "$t" -gt 20 ] || { echo "cohort $3 $s K=$kk: budget spent, skipped"; continue; }
            # the device's memory in use, sampled every 100 ms while the round runs (its peak
            # beside fedrun's estimate, memory_estimate_bytes)
            local mem="$out/logs/memory_$3_${s}_$kk.txt" sampler="" peak=null
            if command -v nvidia-smi > /dev/null; then
                nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$mem" 2>/dev/null &
                sampler=$!
            fi
            timeout $(( t < per_model ? t : per_model )) "$2" "${args[@]}" --set run.backend="\"$1\"" \
                --set run.cohort="$kk" 2>>"$out/logs/cohort_$3.err" | grep '"summary"' > /tmp/gpu_check_round.json
            [ -n "$sampler" ] && { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; }
            [ -s "$mem" ] && peak=$(sort -n "$mem" | tail -1)
            [ -s /tmp/gpu_check_round.json ] \
                && sed "s/^{/{\"who\":\"fedrun $3\",\"round\":\"$s\",\"device_peak_mib\":$peak,/" \
                    /tmp/gpu_check_round.json >> "$out/cohort.jsonl" \
                || echo "cohort $3 $s K=$kk: failed or timed out (logs/cohort_$3.err)"
        done
    done
}

# --- 3 and 4, per backend -----------------------------------------------------------------
agree() {  # backend binary label: every algorithm of --agree, on flex and on the backend
    local b="$1" bin="$2" label="$3" d="$out/agree" a be name extra
    mkdir -p "$d"
    for a in ${agree_algorithms//,/ }; do
        for be in flex "$b"; do
            name="${a}_$be"
            [ "$be" = flex ] || name="${a}_$label"
            [ -f "$d/$name/rounds.csv" ] && continue
            [ "$(left)" -gt 30 ] || { echo "agreement $a $label: budget spent, skipped"; return 1; }
            # Mime on its SGD-with-momentum base: its AMSGrad base diverges at the quickstart's
            # lr of 0.5 on flex too (test loss 3.5e6 after one round), where no agreement means much
            extra=(); [ "$a" = mime ] && extra=(--set 'mime.base="sgdm"')
            timeout 150 "$bin" --set fl.rounds=2 --set local.steps=3 --set fl.clients_per_round=2 "${extra[@]}" \
                --set fl.algorithm="\"$a\"" --set run.backend="\"$be\"" --set run.name="\"$name\"" \
                --out "$d" --force > "$out/logs/agree_$name.log" 2>&1 \
                || { echo "agreement $a $label: $name failed (logs/agree_$name.log)"; continue 2; }
        done
        $py - "$d/${a}_flex/rounds.csv" "$d/${a}_$label/rounds.csv" "$a $label" <<'EOF' | tee -a "$out/agree.txt"
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
ok = len(a) == len(b) == 2
worst = 0.0
for ra, rb in zip(a, b):
    for k in ("test_loss", "train_loss"):
        x, y = float(ra[k]), float(rb[k])
        worst = max(worst, abs(x - y) / max(abs(x), 1.0))
ok = ok and worst <= 1e-3
print(f"agreement {sys.argv[3]}: {'PASS' if ok else 'FAIL'} (2 rounds of the quickstart with 2 clients of 3 steps, worst relative difference of test_loss/train_loss {worst:.2e}, tolerance 1e-3)")
EOF
    done
}
graph_agree() {  # backend binary label: the captured step against the eager one, 20 steps
    local b="$1" bin="$2" label="$3" d="$out/graph" a g name extra hw
    mkdir -p "$d"
    for a in ${graph_algorithms//,/ }; do
        for g in off on; do
            name="${a}_${label}_$g"
            [ "$(left)" -gt 30 ] || { echo "graph $a $label: budget spent, skipped"; return 1; }
            extra=(); [ "$a" = mime ] && extra=(--set 'mime.base="sgdm"' --set 'mime.lite=false')
            timeout 150 "$bin" --set fl.rounds=1 --set local.steps=20 --set fl.clients_per_round=2 "${extra[@]}" \
                --set fl.algorithm="\"$a\"" --set run.backend="\"$b\"" --set run.graph="\"$g\"" \
                --set run.name="\"$name\"" --out "$d" --force > "$out/logs/graph_$name.log" 2>&1 \
                || { echo "graph $a $label: $name failed (logs/graph_$name.log)"; continue 2; }
        done
        hw=$(grep -c "no hardware graph" "$out/logs/graph_${a}_${label}_on.log")
        $py - "$d/${a}_${label}_off/rounds.csv" "$d/${a}_${label}_on/rounds.csv" "$a $label" "$hw" <<'EOF' | tee -a "$out/graph.txt"
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
worst = 0.0
for ra, rb in zip(a, b):
    for k in ("test_loss", "train_loss", "update_norm"):
        x, y = float(ra[k]), float(rb[k])
        worst = max(worst, abs(x - y) / max(abs(x), 1e-12))
ok = len(a) == len(b) == 1 and worst <= 1e-6
how = "no hardware graph (the closure re-run)" if sys.argv[4] != "0" else "a hardware graph"
print(f"graph {sys.argv[3]}: {'PASS' if ok else 'FAIL'} (replay against eager after 20 steps of 2 clients, {how}; worst relative difference of test_loss/train_loss/update_norm {worst:.2e}, tolerance 1e-6)")
EOF
    done
}
carry_cache() {  # backend binary label: `fedrun tune --export` here, `--import` into an empty cache
    local b="$1" bin="$2" label="$3" t0 fresh="$out/cache-imported-$3"
    [ "$(left)" -gt 60 ] || { echo "kernel cache $label: budget spent, skipped"; return; }
    timeout 120 "$bin" tune --set run.backend="\"$b\"" --set fl.rounds=1 \
        --export "$out/kernels-$label.bundle" >> "$out/logs/carry_$label.log" 2>&1 \
        || { echo "kernel cache $label: tune --export failed (logs/carry_$label.log)"; return; }
    rm -rf "$fresh"; mkdir -p "$fresh"
    XDG_CACHE_HOME="$fresh" "$bin" tune --import "$out/kernels-$label.bundle" >> "$out/logs/carry_$label.log" 2>&1 \
        || { echo "kernel cache $label: tune --import failed (logs/carry_$label.log)"; return; }
    t0=$(date +%s.%N)
    XDG_CACHE_HOME="$fresh" timeout 120 "$bin" --set run.backend="\"$b\"" --set fl.rounds=1 \
        --set run.name="\"carry_$label\"" --out "$out/carry" --force --quiet >> "$out/logs/carry_$label.log" 2>&1 \
        && echo "kernel cache $label: exported, imported into an empty cache, and a 1-round quickstart on it took $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s" \
        || echo "kernel cache $label: the run on the imported cache failed (logs/carry_$label.log)"
}
tune() {  # backend binary label
    local b="$1" bin="$2" label="$3" m i t0 t1
    for m in ${tune_models//,/ }; do
        for i in 1 2; do
            t=$(left); [ "$t" -gt 30 ] || { echo "tune $label $m: budget spent, skipped"; return; }
            t0=$(date +%s.%N)
            timeout $(( t < 300 ? t : 300 )) "$bin" bench --workload tune --model "$m" --steps 2 \
                --set run.backend="\"$b\"" 2>>"$out/logs/tune_$label.err" | grep '"tune"' \
                | sed "s/^{/{\"backend\":\"$label\",\"call\":$i,/" >> "$out/tune.jsonl" \
                || echo "tune $label $m (call $i): failed or timed out after $(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $t0}") s (logs/tune_$label.err)"
        done
    done
}
: > "$out/fedrun.jsonl"
: > "$out/second.jsonl"
: > "$out/tune.jsonl"
first=1
seen=()
for pair in "${pairs[@]}"; do
    bin="${pair#*=}"
    [ -x "$bin" ] || { echo "gpu_check: $bin is not an executable file" >&2; exit 2; }
    for b in $(echo "${pair%%=*}" | tr ',' ' '); do
        # A backend given twice (two builds of it) is told apart by its binary's name.
        label="$b"
        case " ${seen[*]:-} " in *" $b "*) label="$b-$(basename "$bin")" ;; esac
        seen+=("$b")
        "$bin" --version 2>/dev/null | sed "s/^/$label binary: /"
        [ "$(left)" -gt 60 ] && agree "$b" "$bin" "$label"
        list="$models"
        [ $first -eq 0 ] && [ -n "$later_models" ] && list="$later_models"
        for m in ${list//,/ }; do
            t=$(left); [ "$t" -gt 15 ] || { echo "fedrun $b $m: budget spent, skipped"; continue; }
            timeout $(( t < per_model ? t : per_model )) "$bin" bench --workload model --model "$m" --steps "$steps" \
                --rounds "$reps" --set run.backend="\"$b\"" 2>>"$out/logs/fedrun_$label.err" \
                | grep '"summary"' | sed "s/^{/{\"backend\":\"$label\",/" >> "$out/fedrun.jsonl" \
                || echo "fedrun $label $m: failed or timed out (logs/fedrun_$label.err)"
        done
        if [ -n "$graph_algorithms" ]; then
            graph_agree "$b" "$bin" "$label"
            for m in ${list//,/ }; do
                t=$(left); [ "$t" -gt 15 ] || { echo "fedrun $b $m eager: budget spent, skipped"; continue; }
                timeout $(( t < per_model ? t : per_model )) "$bin" bench --workload model --model "$m" --steps "$steps" \
                    --rounds "$reps" --set run.backend="\"$b\"" --set 'run.graph="off"' 2>>"$out/logs/fedrun_$label.err" \
                    | grep '"summary"' | sed "s/^{/{\"backend\":\"$label eager\",/" >> "$out/fedrun.jsonl" \
                    || echo "fedrun $label $m eager: failed or timed out (logs/fedrun_$label.err)"
            done
        fi
        if [ "$second" = 1 ]; then
            for m in ${list//,/ }; do
                t=$(left); [ "$t" -gt 15 ] || { echo "second start $label $m: budget spent, skipped"; continue; }
                timeout $(( t < 60 ? t : 60 )) "$bin" bench --workload model --model "$m" --steps 1 \
                    --rounds 1 --no-eval --set run.backend="\"$b\"" 2>>"$out/logs/second_$label.err" \
                    | grep '"summary"' | sed "s/^{/{\"backend\":\"$label\",\"second\":true,/" >> "$out/second.jsonl" \
                    || echo "second start $label $m: failed or timed out (logs/second_$label.err)"
            done
        fi
        [ -n "$tune_models" ] && tune "$b" "$bin" "$label"
        [ "$carry" = 1 ] && carry_cache "$b" "$bin" "$label"
        [ -n "$cohort" ] && cohort_rounds "$b" "$bin" "$label"
        first=0
    done
done


# --- 5. the table --------------------------------------------------------------------------
$py - "$out" <<'EOF'
import json, os, sys
out = sys.argv[1]
rd = lambda p: [json.loads(l) for l in open(os.path.join(out, p)) if l.strip()]
torch, fed, tuned = rd("torch.jsonl"), rd("fedrun.jsonl"), rd("tune.jsonl")
second = {(r["backend"], r["model"]): r.get("warmup_s") for r in rd("second.jsonl")}
cohort = rd("cohort.jsonl") if os.path.exists(os.path.join(out, "cohort.jsonl")) else []
machine = open(os.path.join(out, "machine.txt")).read().strip().splitlines()
agree = open(os.path.join(out, "agree.txt")).read().strip().splitlines() if os.path.exists(os.path.join(out, "agree.txt")) else []
if os.path.exists(os.path.join(out, "graph.txt")):
    agree += open(os.path.join(out, "graph.txt")).read().strip().splitlines()
tp = {r["model"]: r for r in torch}
backends = sorted({r["backend"] for r in fed})
ms = lambda s: "–" if s is None else f"{s * 1e3:.1f}"
ratio = lambda a, b: "–" if a is None or b is None else f"{a / b:.2f}×"
sec = lambda s: "–" if s is None else f"{s:.1f}"
num = lambda n: "–" if n is None else f"{n:.0f}"
lines = ["# fedrun on a GPU", "", *[f"- {l}" for l in machine + agree], "",
         "Cold start: the model's first process on an empty cache, from its start to the end of its first round of",
         "local steps; second start: a second process of one step. Launches: kernels a local step and an evaluation issue.", "",
         "| model | backend | fedrun step ms | PyTorch step ms | step ratio | fedrun eval ms | PyTorch eval ms | eval ratio | cold start s | second start s | launches a step | launches an eval |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
rows = []
for r in fed:
    t = tp.get(r["model"], {})
    ts, te = t.get("median_step_s"), t.get("median_eval_s")
    fs, fe = r.get("median_step_s"), r.get("median_eval_s")
    rows.append(dict(model=r["model"], backend=r["backend"], fedrun_step_s=fs, torch_step_s=ts,
                     fedrun_eval_s=fe, torch_eval_s=te,
                     step_ratio=None if fs is None or ts is None else fs / ts,
                     eval_ratio=None if fe is None or te is None else fe / te,
                     cold_start_s=r.get("warmup_s"), second_start_s=second.get((r["backend"], r["model"])),
                     launches_per_step=r.get("launches_per_step"), launches_per_eval=r.get("launches_per_eval")))
    q = rows[-1]
    lines.append(f"| {r['model']} | {r['backend']} | {ms(fs)} | {ms(ts)} | {ratio(fs, ts)} | {ms(fe)} | {ms(te)} | {ratio(fe, te)} | "
                 f"{sec(q['cold_start_s'])} | {sec(q['second_start_s'])} | {num(q['launches_per_step'])} | {num(q['launches_per_eval'])} |")
if tuned:
    lines += ["", "Tuning (`fedrun bench --workload tune --steps 2`, an empty cache before the first call):", "",
              "| model | backend | first call s | second call s |", "|---|---|---|---|"]
    for (m, b) in dict.fromkeys((r["model"], r["backend"]) for r in tuned):
        got = {r["call"]: r["tune_s"] for r in tuned if (r["model"], r["backend"]) == (m, b)}
        lines.append(f"| {m} | {b} | {got.get(1, '–') if 1 not in got else f'{got[1]:.1f}'} | {f'{got[2]:.1f}' if 2 in got else '–'} |")
if cohort:
    lines += ["", "The cohort rounds (w2-cnn: 50 clients × 5 steps of batch 10 of the CIFAR CNN; resnet18:",
              "10 × 5 of batch 50 of ResNet-18; lstm-small, transformer-small: 10 × 5 of batch 50 of the small LSTM",
              "and of the quickstart's transformer), seconds:", "",
              "| round | who | cohort | round s | device peak MB (PyTorch: its allocator's) | fedrun's estimate MB |", "|---|---|---|---|---|---|"]
    mb = lambda b: "–" if b is None else f"{b / 1e6:.0f}"
    for r in cohort:
        peak = r.get("device_peak_mib")
        peak = peak * 2**20 if peak is not None else r.get("torch_peak_bytes")
        lines.append(f"| {r.get('round', 'w2-cnn')} | {r['who']} | {r.get('cohort', '–')} | {r['median_round_s']:.3f} | "
                     f"{mb(peak)} | {mb(r.get('memory_estimate_bytes'))} |")
json.dump({"machine": machine, "agreement": agree, "rows": rows, "torch": torch, "fedrun": fed, "tune": tuned, "cohort": cohort},
          open(os.path.join(out, "gpu_check.json"), "w"), indent=1)
open(os.path.join(out, "gpu_check.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
echo "gpu_check: $(( $(date +%s) - start )) s; $out/gpu_check.json, $out/gpu_check.md"
