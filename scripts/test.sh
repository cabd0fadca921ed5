#!/usr/bin/env bash
# The whole test suite on a fresh machine: install tokspeed with every optional part, Debian's chromium
# for the browser test, then pytest. Slow groups (a real llama.cpp server built from source by
# llama-cpp-python, headless Chromium) are marked `slow` and run too; `bash scripts/test.sh -m "not slow"`
# skips them.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/ticker.sh
source scripts/ticker.sh
T0=$(date +%s)
echo "scripts/test.sh: a first run on 2 cores takes about 30 minutes (pip builds llama-cpp-python from source," \
     "~15 min; then llama.cpp's llama-server and llama-bench, ~11 min); both are cached, so later runs take" \
     "the test time alone. A line every 20 s says what is being built." >&2
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium (browser test)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  TICK_LOG=/dev/null with_ticker "apt-get update" $SUDO apt-get update -qq
  TICK_LOG=/dev/null with_ticker "apt-get install chromium" \
    env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
fi
python3 -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# llama-cpp-python compiles llama.cpp from source the first time (~15 minutes measured on 2 cores, more on
# fewer); pip caches the built wheel, so later runs install in seconds
echo "installing tokspeed with every optional part (the first time pip builds llama-cpp-python from source)" >&2
with_ticker "pip install (llama-cpp-python builds from source the first time)" \
  python3 -m pip install -q -e '.[files,measure,llamacpp,server,distributed,plot,web,test]'
# llama.cpp's own multi-slot llama-server (+ llama-bench, same cmake build) for the slow bench-server tests: built
# once per llama-cpp-python version (~11 min measured on 2 cores), cached in ~/.cache/tokspeed, a no-op after that
echo "building llama.cpp's llama-server and llama-bench (once per llama-cpp-python version; cached)" >&2
with_ticker "llama-server build" bash scripts/build_llama_server.sh >/dev/null
echo "scripts/test.sh: set-up took $(( $(date +%s) - T0 )) s; running the tests" >&2
python3 -m pytest -q "$@"
