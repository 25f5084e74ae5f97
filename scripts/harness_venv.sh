#!/usr/bin/env bash
# Create (once) the venv that runs SemiAnalysis's agentx-harness for `make bench BENCH=harness`,
# and the offline tiktoken cache it needs for cl100k_base. Prints the venv's path.
#
# usage: bash scripts/harness_venv.sh [VENV]
#   VENV defaults to $AGENTX_HARNESS_VENV, else .venv-harness. One home for the peers' venvs:
#   scripts/peer_venv.sh (AIPerf too).
set -euo pipefail
exec bash "$(cd "$(dirname "$0")" && pwd)/peer_venv.sh" harness "$@"
