#!/usr/bin/env bash
# Debian's chromium for the headless-browser test of the HTML reports (tests/report/test_browser.py).
#
#   bash scripts/install_chromium.sh     # no-op when chromium is already there
#
# Installs with apt-get when it can (root on Debian/Ubuntu; .ci/run calls this). Where apt-get is
# missing or we are not root, it says so and exits 0: the browser test then skips with that reason.
# An apt-get that is there but fails is an error (CI must not silently skip the test).
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium: no apt-get here; install chromium by hand to run the browser test" >&2
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install_chromium: not root; run 'sudo apt-get install chromium' to run the browser test" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
command -v chromium >/dev/null
echo "install_chromium: $(chromium --version 2>/dev/null || echo chromium installed)" >&2
