#!/usr/bin/env bash
# `make test-matrix`: the test suite under every Python from 3.10 to 3.13 found on this machine (at least the
# lowest and the newest are required), each in its own venv (.venv-py3.X), installed with the test extras.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
found=()
declare -A exe_of
interpreter() {  # python3.X on PATH that runs (a pyenv shim may exist without the version active), else pyenv's
    local v=$1 exe
    exe=$(command -v "python$v" || true)
    if [ -n "$exe" ] && "$exe" -c 'import sys' 2>/dev/null; then echo "$exe"; return; fi
    for exe in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v"; do
        if [ -x "$exe" ] && "$exe" -c 'import sys' 2>/dev/null; then echo "$exe"; return; fi
    done
}
for v in 3.10 3.11 3.12 3.13; do
    exe=$(interpreter "$v")
    if [ -n "$exe" ]; then found+=("$v"); exe_of[$v]=$exe; else echo "python$v: not on this machine, skipped"; fi
done
case " ${found[*]} " in *" 3.10 "*) ;; *) echo "python3.10 (the lowest supported) is required"; exit 1 ;; esac
[ "${#found[@]}" -ge 2 ] || { echo "need at least the lowest and the newest Python"; exit 1; }
status=0
for v in "${found[@]}"; do
    venv=".venv-py$v"
    echo "== Python $v ($venv, ${exe_of[$v]})"
    if [ ! -x "$venv/bin/python" ]; then "${exe_of[$v]}" -m venv "$venv" || { status=1; continue; }; fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check -e '.[test]' || { echo "Python $v: install failed"; status=1; continue; }
    "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" || status=1
done
exit $status
