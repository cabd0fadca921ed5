# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/build_llama_server.sh: run a long, silent command with a line on
# stderr every TICK_S seconds (default 20) saying what it is and how long it has run, so a first set-up never
# looks stuck. The command's own output is kept; its exit status is returned.
#
#   with_ticker "building llama-cpp-python (pip)" python3 -m pip install ...
#   TICK_LOG=build.log with_ticker "cmake --build" cmake ...     (the command's output to that file)
with_ticker() {
  local label="$1"; shift
  local every="${TICK_S:-20}" start pid rc
  start=$(date +%s)
  if [ -n "${TICK_LOG:-}" ]; then "$@" >"$TICK_LOG" 2>&1 & else "$@" & fi
  pid=$!
  (
    while sleep "$every"; do
      kill -0 "$pid" 2>/dev/null || exit 0
      echo "  ... $label: $(( $(date +%s) - start )) s elapsed, still working" >&2
    done
  ) &
  local ticker=$!
  rc=0
  wait "$pid" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  echo "  $label: done in $(( $(date +%s) - start )) s" >&2
  return "$rc"
}
