#!/usr/bin/env bash
# The whole test suite on a fresh machine: install tokspeed with every optional part, then pytest.
# Slow groups (llama-cpp-python built from source, headless Chromium) are marked `slow` and run too.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --upgrade pip >/dev/null 2>&1 || true
python3 -m pip install -q -e '.[files,measure,llamacpp,server,plot,web,test]'
python3 -m pytest -q "$@"
