#!/usr/bin/env bash
# Run one line of a command file written by `fedrun sweep ... --emit FILE`: line
# $SLURM_ARRAY_TASK_ID (1-based) of FILE. Each line is a complete `fedrun` command that writes
# into its own folder under the sweep's --out and resumes it when run again, so a requeued or
# repeated task carries on where it stopped.
#
#   fedrun sweep --config configs/cifar_fedavg.toml --grid local.weight_decay=1e-3,1e-2 \
#       --grid run.seed=0,1 --out results/sweep_wd --emit cmds.txt
#   sbatch --array=1-$(wc -l < cmds.txt) scripts/slurm_array.sh cmds.txt
#   fedrun report results/sweep_wd          # once the array is done
#
# What each task asks for; set them here or on sbatch's command line (which wins):
#   --gres=gpu:1      one GPU, for `run.backend = "cuda"` or "vulkan" (a CPU run on flex needs
#                     none: delete the line or give `--gres=none`);
#   --time=HH:MM:SS   the task's time limit: a run that reaches it stops and is resumed from its
#                     checkpoint when the task is submitted again (the same line, the same
#                     folder); pair it with `--set run.checkpoint_minutes=M` (M well under the
#                     limit) so that a stop loses at most M minutes, whatever a round lasts;
#   --signal=B:TERM@120   SIGTERM to this script 120 s before the limit; `exec` below makes the
#                     run this script's process, so the run itself gets it and stops within a
#                     local step, keeping its last checkpoint, long before Slurm's SIGKILL.
#SBATCH --job-name=fedrun
#SBATCH --cpus-per-task=2
#SBATCH --gres=gpu:1
#SBATCH --time=04:00:00
#SBATCH --signal=B:TERM@120
#SBATCH --output=fedrun_%A_%a.out
set -euo pipefail
file="${1:?usage: sbatch --array=1-N scripts/slurm_array.sh COMMANDS_FILE}"
id="${SLURM_ARRAY_TASK_ID:?SLURM_ARRAY_TASK_ID is not set: submit with sbatch --array=1-N}"
line=$(sed -n "${id}p" "$file")
if [ -z "$line" ]; then
    echo "slurm_array.sh: $file has no line $id" >&2
    exit 2
fi
# one thread per core Slurm gave the task
export RAYON_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"
echo "[task $id] $line" >&2
# the run replaces this shell, so that Slurm's signal (--signal=B:...) reaches it
eval "exec $line"
