#!/usr/bin/env bash
# The whole test suite on a fresh machine: install tokspeed with every optional part, Debian's chromium
# for the browser test, then pytest. Slow groups (a real llama.cpp server built from source by
# llama-cpp-python, headless Chromium) are marked `slow` and run too; `bash scripts/test.sh -m "not slow"`
# skips them.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium (browser test)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
python3 -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# llama-cpp-python compiles llama.cpp from source the first time (~12 minutes on 2 cores, more on fewer);
# pip caches the built wheel, so later runs install in seconds
echo "installing tokspeed with every optional part. The first time, pip builds llama-cpp-python from source:" >&2
echo "  about 12 minutes on 2 cores with no output meanwhile (it is working, not stuck); later runs take seconds." >&2
python3 -m pip install -q -e '.[files,measure,llamacpp,server,distributed,plot,web,test]'
# llama.cpp's own multi-slot llama-server for the slow bench-server tests: built once per llama-cpp-python version (16 CPU-minutes: ~8 min on 2 free cores, 15 min measured on a busy one), cached in ~/.cache/tokspeed, a no-op after that
bash scripts/build_llama_server.sh >/dev/null
python3 -m pytest -q "$@"
