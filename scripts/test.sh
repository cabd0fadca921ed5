#!/usr/bin/env bash
# The whole test suite on a fresh machine: install tokspeed with its optional parts, Debian's chromium for the
# browser test, llama.cpp's own llama-server and llama-bench (one cmake build, scripts/build_llama_server.sh),
# then pytest. Slow groups (the real llama-server, headless Chromium) are marked `slow` and run too;
# `bash scripts/test.sh -m "not slow"` skips them. llama-cpp-python (the optional in-process backend, extra
# `llamacpp`) is not installed: it would build the same llama.cpp sources a second time; its tests skip, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/ticker.sh
source scripts/ticker.sh
T0=$(date +%s)
echo "scripts/test.sh: a first run builds llama.cpp once (llama-server + llama-bench, version in" \
     "scripts/llama_cpp_version.txt): ~11 CPU-minutes, about 8 minutes on 2 idle cores, then the tests; cached," \
     "so later runs take the test time alone. A line every 20 s says what is being built." >&2
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium (browser test)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  TICK_LOG=/dev/null with_ticker "apt-get update" $SUDO apt-get update -qq
  TICK_LOG=/dev/null with_ticker "apt-get install chromium" \
    env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
fi
python3 -m pip install -q --upgrade pip >/dev/null 2>&1 || true
echo "installing tokspeed with its optional parts (wheels only: nothing is compiled here)" >&2
with_ticker "pip install" \
  python3 -m pip install -q -e '.[files,measure,server,distributed,plot,web,test]'
# llama.cpp's own llama-server and llama-bench (one cmake build) for the slow tests: built once per pinned
# version, cached in ~/.cache/tokspeed, a no-op after that
echo "building llama.cpp's llama-server and llama-bench (once per version; cached)" >&2
with_ticker "llama-server build" bash scripts/build_llama_server.sh >/dev/null
echo "scripts/test.sh: set-up took $(( $(date +%s) - T0 )) s; running the tests" >&2
python3 -m pytest -q "$@"
