#!/usr/bin/env bash
# The main job on a fresh machine: install, one real prediction, then probe this machine and measure a
# real decode on it, predicted and measured side by side. Each command is printed before it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${TOKSPEED_OUT:-main-job-out}
mkdir -p "$OUT"
run() { printf '\n$ %s\n' "$*" >&2; "$@"; }
run python3 -m pip install -q -e '.[files,measure]'
run tokspeed predict llama-3.1-8b --hardware rtx-4090 --quant Q4_K_M
run tokspeed probe --quick -o "$OUT/local.toml"
run tokspeed measure qwen2.5-0.5b --hardware "$OUT/local.toml" --context 0,512,2048 --prompt 128 --gen 16 -o "$OUT/run.json"
