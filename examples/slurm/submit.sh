#!/usr/bin/env bash
# Submit an agentx replay split over SLURM: an array job of N shards that start together, and a
# merge job that runs once they all succeeded.
#   AGENTX_ENDPOINT=http://gpu-node-1:8000 AGENTX_TRACE=/shared/traces/agent.parquet \
#   AGENTX_REPLAY_ARGS="--concurrency 16 --duration 900" bash submit.sh 8
# Needs the variables run_shard.sh reads (AGENTX_ENDPOINT, optionally AGENTX_TRACE,
# AGENTX_REPLAY_ARGS, AGENTX_VENV); AGENTX_RESULTS defaults to ./results/agentx-<time>.
# AGENTX_START_DELAY (seconds, default 120) leaves the array time to be scheduled and load the
# trace; a task that starts after that starts at once, with a warning in its summary.
set -euo pipefail

shards=${1:?usage: submit.sh N_SHARDS}
if ! [[ $shards =~ ^[1-9][0-9]*$ ]]; then
    echo "submit.sh: N_SHARDS must be a positive integer, got $shards" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${AGENTX_ENDPOINT:?set AGENTX_ENDPOINT to the server under test}"
AGENTX_RESULTS=$(realpath -m "${AGENTX_RESULTS:-results/agentx-$(date -u +%Y%m%d-%H%M%S)}")
AGENTX_START_AT=$(($(date +%s) + ${AGENTX_START_DELAY:-120}))
export AGENTX_RESULTS AGENTX_START_AT AGENTX_SHARDS=$shards AGENTX_SLURM_DIR=$here

array=$(sbatch --parsable --array="0-$((shards - 1))" --export=ALL "$here/shards.sbatch")
array=${array%%;*}  # --parsable prints "id" or "id;cluster"
merge=$(sbatch --parsable --dependency="afterok:$array" --export=ALL "$here/merge.sbatch")
merge=${merge%%;*}
echo "agentx: shards: job $array (array 0-$((shards - 1)), start at $(date -u -d "@$AGENTX_START_AT" +%FT%TZ))"
echo "agentx: merge: job $merge, after every shard succeeded -> $AGENTX_RESULTS/merged"
