#!/usr/bin/env bash
# The FedNAR weight-decay sweep (Figure 2): wd in {1e-4, 1e-3, 1e-2, 5e-2, 1e-1}, baseline and
# FedNAR, for one config. Then a Figure-2 style plot and a markdown report.
#
#   scripts/sweep_wd.sh configs/cifar_fedavg.toml [any fedrun sweep option...]
#   scripts/sweep_wd.sh configs/cifar_fedavg.toml --set fl.rounds=20 --data-dir data/cifar10 --jobs 2
#
# Environment: FEDRUN (the binary; default the repository's target/release/fedrun, built if
# missing), SEEDS (default "0"), WDS (default "1e-4,1e-3,1e-2,5e-2,1e-1"), OUT (default
# results/sweep_wd_<config>). Every path (CONFIG, --data-dir, OUT) is relative to the working
# directory the script is called from, as for fedrun itself.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
config="${1:?usage: scripts/sweep_wd.sh CONFIG [fedrun sweep options...]}"
shift
FEDRUN="${FEDRUN:-$root/target/release/fedrun}"
if [ ! -x "$FEDRUN" ]; then
    cargo build --release --manifest-path "$root/Cargo.toml"
fi
name="$(basename "$config" .toml)"
OUT="${OUT:-results/sweep_wd_$name}"
"$FEDRUN" sweep --config "$config" --out "$OUT" \
    --grid "local.weight_decay=${WDS:-1e-4,1e-3,1e-2,5e-2,1e-1}" \
    --grid local.nar=false,true \
    --grid "run.seed=${SEEDS:-0}" "$@"
"$FEDRUN" plot "$OUT" --x weight_decay -o "$OUT/fig2_wd.png" --title "$name: final test accuracy against weight decay"
"$FEDRUN" plot "$OUT" --x weight_decay -o "$OUT/fig2_wd.svg" --title "$name: final test accuracy against weight decay"
"$FEDRUN" plot "$OUT" -o "$OUT/curves.png" --title "$name: test accuracy per round"
"$FEDRUN" report "$OUT" > "$OUT/report.md"
echo "sweep: $OUT/sweep.csv, $OUT/fig2_wd.png, $OUT/fig2_wd.svg, $OUT/curves.png, $OUT/report.md"
