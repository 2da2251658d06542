#!/usr/bin/env bash
# Install Chromium from the distribution's packages for the dashboard's browser tests
# (tests/dashboard_tests). Idempotent: quick when a Chromium is already there. The tests
# drive it with Playwright (a dev dependency in pyproject.toml), never a downloaded browser.
#
# GANGSCHED_CHROMIUM names the browser to use (default: chromium on PATH, or
# /usr/bin/chromium); when it runs, nothing is installed.
set -euo pipefail
found="${GANGSCHED_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
if [ -n "$found" ] && "$found" --version >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: no Chromium and no apt-get; install Chromium and set" \
       "GANGSCHED_CHROMIUM to it (the browser tests are skipped without it, outside CI)" >&2
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
  else
    echo "install-chromium: not root and no sudo: run 'apt-get install chromium' as root" >&2
    exit 0
  fi
fi
echo "Installing Chromium (apt-get) for the dashboard's browser tests ..." >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
chromium --version >&2
