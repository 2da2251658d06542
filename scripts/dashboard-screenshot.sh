#!/usr/bin/env bash
# Make docs/dashboard.png, the README's picture of the dashboard: the browser test runs
# the operator on the fake API server and saves the applications page while a gang is
# held by its queue's quota. Needs Chromium (scripts/install-chromium.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
gangsched_venv dev
bash scripts/install-chromium.sh
GANGSCHED_DASHBOARD_SCREENSHOT="$PWD/docs/dashboard.png" CI=true "$VENV_PY" -m pytest -q \
  -p no:cacheprovider tests/dashboard_tests/test_browser.py -k waiting_then_bound
echo "wrote docs/dashboard.png" >&2
