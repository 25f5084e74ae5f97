#!/usr/bin/env bash
# Print the path of a Python >= 3.12 on this machine, or explain what to install and fail.
set -u
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; }
candidates=()
[ -n "${AGENTX_PYTHON:-}" ] && candidates+=("$AGENTX_PYTHON")
for v in python3.13 python3.12; do
  p=$(command -v "$v" 2>/dev/null) && candidates+=("$p")
done
root="${PYENV_ROOT:-$HOME/.pyenv}"
if [ -d "$root/versions" ]; then
  for d in $(ls -1 "$root/versions" 2>/dev/null | sort -rV); do
    [ -x "$root/versions/$d/bin/python3" ] && candidates+=("$root/versions/$d/bin/python3")
  done
fi
candidates+=(python3)
for c in "${candidates[@]}"; do
  if ok "$c"; then
    # resolve pyenv shims to the real interpreter so the venv does not depend on the shim's version file
    "$c" -c 'import sys; print(sys.executable)'
    exit 0
  fi
done
echo "agentx needs Python >= 3.12 and none was found (looked for \$AGENTX_PYTHON, python3.13, python3.12, pyenv versions, python3)." >&2
echo "Install one, e.g. 'apt-get install python3.12 python3.12-venv' or 'pyenv install 3.12', then re-run make." >&2
exit 1
