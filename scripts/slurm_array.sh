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
#   --gres=gpu:1      one GPU, only for `run.backend = "cuda"` or "vulkan": give it on sbatch's
#                     command line for such a spec (the shipped configs run on the CPU, flex);
#   --mem=SIZE        the task's memory: `fedrun check --config SPEC` prints the run's peak
#                     estimate ("memory: about … at its peak"); ask for it with a margin. fedrun
#                     reads the job's cgroup limit and refuses a spec over it before it starts;
#   --time=HH:MM:SS   the task's time limit: a run that reaches it stops and is resumed from its
#                     checkpoint (the same line, the same folder); pair it with `--set
#                     run.checkpoint_minutes=M` (M well under the limit) so that a stop loses at
#                     most M minutes, whatever a round lasts;
#   --signal=B:USR1@120   SIGUSR1 to this script 120 s before the limit: the script sends the
#                     run SIGTERM, the run stops within a local step, keeps its last checkpoint
#                     and exits with status 75, and the script requeues the task (`scontrol
#                     requeue`, allowed by --requeue), which resumes the run, so that an array
#                     finishes without hands. A SIGTERM to the script (`scancel`) stops the run
#                     the same way without a requeue. Any other exit status is the task's.
#SBATCH --job-name=fedrun
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=04:00:00
#SBATCH --signal=B:USR1@120
#SBATCH --requeue
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
# the run as this script's child: Slurm's early signal (USR1) and a cancel (TERM) reach it as
# SIGTERM; only the early signal requeues
set +e
( eval "exec $line" ) &
pid=$!
limit=0
trap 'limit=1; kill -TERM "$pid" 2> /dev/null' USR1
trap 'kill -TERM "$pid" 2> /dev/null' TERM INT
wait "$pid"
rc=$?
# a signal interrupts `wait`: wait again until the run has stopped, for its own status
while kill -0 "$pid" 2> /dev/null; do
    wait "$pid"
    rc=$?
done
# stopped at the time limit with its checkpoint kept (75): requeue the task, which resumes the run
if [ "$rc" -eq 75 ] && [ "$limit" -eq 1 ]; then
    job="${SLURM_ARRAY_JOB_ID:+${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}}"
    job="${job:-${SLURM_JOB_ID:-}}"
    if [ -n "$job" ] && scontrol requeue "$job"; then
        echo "[task $id] stopped at the time limit: requeued as job $job, to resume" >&2
        exit 0
    fi
    echo "[task $id] stopped by a signal: submit the task again to resume it" >&2
fi
# killed outright (137 = 128 + SIGKILL): most often the out-of-memory killer at the job's --mem
if [ "$rc" -eq 137 ]; then
    echo "[task $id] killed by SIGKILL (exit 137), most often the out-of-memory killer at the job's memory limit: \`fedrun check\` estimates the run's peak; ask for more with --mem, then submit the task again to resume from its last checkpoint" >&2
fi
exit "$rc"
