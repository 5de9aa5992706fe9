#!/usr/bin/env bash
# System packages the test suite needs beyond Python: Chromium (and a font) for the HTML report's
# browser test, tests/integration/test_report_browser.py. Idempotent and quiet: installs only
# what is missing, with one 'apt-get update'. Without root (or apt-get) it says what to install
# and exits 0; the browser test then skips locally, and fails under CI (CI=1) as it should.
set -euo pipefail

PACKAGES=(chromium fonts-dejavu-core)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "ci_system_deps: not root; install these for the browser test: sudo apt-get install -y ${missing[*]}"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ci_system_deps: no apt-get here; install ${missing[*]} with this system's package manager"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${missing[@]}" >/dev/null
echo "ci_system_deps: installed ${missing[*]}"
