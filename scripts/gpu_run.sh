#!/usr/bin/env bash
# One call on a lent GPU machine, end to end: unpack the fedrun binary carried as .gpubin/fedrun.xz,
# run scripts/gpu_check.sh with the arguments given (BACKEND=fedrun stands for that binary),
# then time the README's quickstart and `fedrun check --time` on the first backend, and put what
# came out under $OUT (default: gpu_run_out/) as at most 8 files: log.txt, gpu_check.md,
# gpu_check.json, quickstart.txt, check_time.txt, paper_run.txt (FedACG's Table 1 rounds and
# their projection), profile.txt (cubecl's per-kernel profile of one model's steps, the CelebA
# CNN unless PROFILE_MODEL says another) and gc.tgz (every log and JSON line).
#
# Built and packed where Rust is (the GPU machine has none): `--features gpu` without `vulkan`,
# so that the binary that travels is the one dry-run here (with `vulkan` in, Mesa's lavapipe
# crashes compiling the wgpu backend's SPIR-V pipelines; `vulkan` is not timed in this call):
#   cargo build --release --features wgpu,cuda,fusion,kernel-cache
#   cp target/release/fedrun /tmp/f && strip /tmp/f
#   mkdir -p .gpubin && xz -T2 -9 -c /tmp/f > .gpubin/fedrun.xz   # .gpubin/ is in .gitignore
# On the GPU machine (the device tool: carry .gpubin):
#   scripts/gpu_run.sh --budget 340 --agree fedavg,fedacg,fedlamb,mime --graph fedavg,fedacg,fedlamb,mime \
#       --no-carry --cohort 50 cuda=fedrun
# Dry run here on lavapipe, the same binary (about 9 minutes on 2 cores):
#   OUT=/tmp/gs PAPER_MODEL=tiny-cnn PAPER_EPOCHS=1 scripts/gpu_run.sh --budget 420 --steps 2 \
#       --reps 1 --models mlp --agree fedavg,fedlamb --graph fedavg,fedacg,fedlamb,mime --no-carry \
#       --no-second wgpu=fedrun
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-gpu_run_out}"
mkdir -p "$out" /tmp/gpu_run
bin=/tmp/gpu_run/fedrun
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" \
    "$here/../.gpubin/fedrun.xz" "$bin" && chmod +x "$bin" || { echo "gpu_run: cannot unpack .gpubin/fedrun.xz" >&2; exit 2; }
args=()
backend=""
for a in "$@"; do
    case "$a" in
        *=fedrun) args+=("${a%=fedrun}=$bin"); [ -n "$backend" ] || backend="${a%%[,=]*}" ;;
        *) args+=("$a") ;;
    esac
done
[ -n "$backend" ] || { echo "gpu_run: give BACKEND=fedrun (cuda=fedrun)" >&2; exit 2; }
gc=/tmp/gpu_run/gc
"$here/gpu_check.sh" --out "$gc" "${args[@]}" 2>&1 | tee "$out/log.txt"
# the README's quickstart, 8 rounds, on the kernels the check compiled (its first round
# compiles what is missing); rounds 2 to 8 are a warm round's time
export XDG_CACHE_HOME="$gc/cache"
{
    echo "# fedrun --set run.backend=\"$backend\" --set fl.rounds=8 (the README's quickstart)"
    timeout 45 "$bin" --set "run.backend=\"$backend\"" --set fl.rounds=8 --out /tmp/gpu_run/qs --force 2>&1 | tail -4
    cat /tmp/gpu_run/qs/quickstart/rounds.csv
} > "$out/quickstart.txt" 2>&1
timeout 40 "$bin" check --time --set "run.backend=\"$backend\"" > "$out/check_time.txt" 2>&1
echo "check --time exit status: $?" >> "$out/check_time.txt"
# FedACG's Table 1 run (issue #67): ResNet-18 with the global pool on CIFAR-10's shape, 100
# clients of 500 images, 5 a round as one cohort, 5 epochs of batch 50 (250 steps a round), an
# evaluation of 10,000 images each round; a few rounds, the fastest after the first (which
# compiles) projected to the paper's 1000. Synthetic images: CIFAR-10 is not carried. FedAvg
# steps the same clients; its server step is a mean. PAPER_MODEL and PAPER_EPOCHS shrink it for
# a dry run on lavapipe.
model=(--set 'model.kind="resnet18"' --set 'model.head="global"')
[ -n "${PAPER_MODEL:-}" ] && model=(--set "model.kind=\"$PAPER_MODEL\"")
{
    echo "# fedrun bench --workload round --config configs/fedacg/fedacg.toml --rounds 3 ${model[*]}, run.cohort = 5"
    timeout 100 "$bin" bench --workload round --config "$here/../configs/fedacg/fedacg.toml" --rounds 3 \
        "${model[@]}" \
        --set 'data.dataset="synthetic"' --set 'data.augmentation="sample"' \
        --set data.synthetic_train=500 --set data.synthetic_test=10000 \
        --set local.epochs="${PAPER_EPOCHS:-5}" --set run.cohort=5 \
        --set "run.backend=\"$backend\"" 2>/tmp/gpu_run/paper.err | grep '^{'
    tail -3 /tmp/gpu_run/paper.err
} > "$out/paper_run.txt" 2>&1
python3 - "$out/paper_run.txt" >> "$out/paper_run.txt" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"round_s"' in l]
warm = [r for r in rows if r["round"] > 1]
if warm:
    r = min(warm, key=lambda r: r["round_s"])
    print(f"# projection: a warm round {r['round_s']:.2f} s (its steps {r['train_s']:.2f} s, its "
          f"evaluation {r['eval_s']:.2f} s); 1000 rounds {r['round_s'] * 1000 / 60:.1f} min (goal: 15)")
else:
    print(f"# projection: no warm round within the time given ({len(rows)} round(s) done)")
EOF
# where one model's step goes, kernel by kernel (issue #66: CelebA's CNN first), on the kernels
# the check compiled; cubecl times each launch, so the steps run slower than unprofiled
pm="${PROFILE_MODEL:-celeba-cnn}"
{
    echo "# CUBECL_DEBUG_OPTION=profile fedrun bench --workload model --model $pm --steps 3 --rounds 1 (backend $backend)"
    CUBECL_DEBUG_LOG=stderr CUBECL_DEBUG_OPTION=profile timeout 40 "$bin" bench --workload model \
        --model "$pm" --steps 3 --rounds 1 --set "run.backend=\"$backend\"" 2>/tmp/gpu_run/prof.log | grep '"summary"'
    python3 "$here/bench/cubecl_profile.py" /tmp/gpu_run/prof.log --top 25
} > "$out/profile.txt" 2>&1
cp "$gc/gpu_check.md" "$gc/gpu_check.json" "$out/" 2>/dev/null
tar czf "$out/gc.tgz" --exclude=cache --exclude='cache-imported-*' --exclude='*.bin' -C /tmp/gpu_run gc qs
cat "$out/quickstart.txt" "$out/check_time.txt" "$out/paper_run.txt" "$out/profile.txt" | tail -40
