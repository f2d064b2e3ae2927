#!/usr/bin/env bash
# `make install-check`: dumptui installs like a tool, from a built wheel, into environments that have
# never seen this source tree: a clean venv (pip), pipx, and uv's tool installer. Each install runs the
# demo end to end, `--json -` and the completion script. Needs PyPI (the wheel's dependencies).
set -euo pipefail
PYTHON=${PYTHON:-python3}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/dumptui-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== building the wheel"
"$PYTHON" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$work/dist" "$here"
wheel=$(ls "$work"/dist/dumptui-*.whl)
echo "   $(basename "$wheel")"
unzip -l "$wheel" | grep -q 'dumptui/report/schemas/bisect.schema.json' || { echo "schemas missing from the wheel"; exit 1; }
unzip -p "$wheel" 'dumptui-*.dist-info/METADATA' | grep -Eq '^License(-Expression)?: Apache-2.0' || { echo "license missing from the metadata"; exit 1; }
unzip -l "$wheel" | grep -Eq 'dist-info/(licenses/)?LICENSE' || { echo "LICENSE missing from the wheel"; exit 1; }

smoke() {  # $1: the dumptui executable of an installation
    local exe=$1 d="$work/demo-$2"
    "$exe" --version
    "$exe" demo "$d" --ops 30 --size 256 -q >/dev/null
    set +e
    "$exe" bisect "$d/ref" "$d/target" --json - > "$work/b.json"
    rc=$?
    set -e
    [ "$rc" = 1 ] || { echo "bisect exited $rc, expected 1"; exit 1; }
    "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["schema_version"] == 1 and d["exit"] == 1 and d["culprit"]' "$work/b.json"
    "$exe" completion bash | grep -q open-result
    echo "   $2: ok"
}

echo "== pip, in a clean venv"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$wheel"
smoke "$work/venv/bin/dumptui" pip
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "${wheel}[xlsx]"
"$work/venv/bin/python" -c 'import openpyxl' && echo "   pip: the [xlsx] extra installs openpyxl"

echo "== pipx and uv (installed into a throwaway venv of their own)"
"$PYTHON" -m venv "$work/tools"
"$work/tools/bin/pip" install --quiet --disable-pip-version-check pipx uv
PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/pipx-bin" "$work/tools/bin/pipx" install --quiet --python "$PYTHON" "$wheel"
smoke "$work/pipx-bin/dumptui" pipx
UV_TOOL_DIR="$work/uv" UV_TOOL_BIN_DIR="$work/uv-bin" UV_CACHE_DIR="$work/uv-cache" \
    "$work/tools/bin/uv" tool install --quiet --python "$(command -v "$PYTHON")" "$wheel"
smoke "$work/uv-bin/dumptui" uv
echo "install-check: ok"
