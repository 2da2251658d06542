# Sourced by scripts/main and scripts/test: make the project virtual environment current.
#
# The environment lives in .venv/ (override with GANGSCHED_VENV). It is created with the
# standard library's venv module, so nothing is installed into the system Python: this works
# where python3 is externally managed (PEP 668) and with PIP_REQUIRE_VIRTUALENV=true.
# It is reused while pyproject.toml and the requested extras are unchanged; otherwise the
# project is installed again (editable, so source changes never need a reinstall).
#
# Usage: gangsched_venv EXTRAS   ("" for the package alone, "dev" for the test tools too)
# Afterwards $VENV_PY is the environment's python and its bin/ leads PATH.

gangsched_venv() {
  local extras="$1"
  local venv="${GANGSCHED_VENV:-.venv}"
  local base="${PYTHON:-python3}"
  if ! "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "gangsched needs Python 3.11 or later; '$base' is $("$base" --version 2>&1)." >&2
    echo "Set PYTHON=/path/to/python3.11 and run this again." >&2
    return 2
  fi
  if [ ! -x "$venv/bin/python" ]; then
    local err
    if ! err=$("$base" -m venv "$venv" 2>&1); then
      echo "$err" >&2
      rm -rf "$venv"
      local minor
      minor=$("$base" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
      echo "Could not create the virtual environment $venv: this Python lacks the venv" >&2
      echo "module or ensurepip. On Debian/Ubuntu: apt-get install python3-venv" >&2
      echo "(or python$minor-venv), then run this again." >&2
      return 2
    fi
  fi
  VENV_PY="$venv/bin/python"
  local stamp="$venv/.gangsched-installed"
  local digest have=""
  digest=$("$VENV_PY" -c 'import hashlib; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())')
  [ -f "$stamp" ] && have=$(cat "$stamp")
  # An install with the dev extras also serves the package alone.
  if [ "$have" != "$digest $extras" ] && [ "$have" != "$digest dev" ]; then
    local spec="."
    [ -n "$extras" ] && spec=".[$extras]"
    echo "Installing gangsched${extras:+ with [$extras]} into $venv ..." >&2
    "$VENV_PY" -m pip install --disable-pip-version-check -q -e "$spec"
    echo "$digest $extras" > "$stamp"
  fi
  PATH="$(cd "$venv" && pwd)/bin:$PATH"
  export PATH VIRTUAL_ENV="$(cd "$venv" && pwd)"
}
