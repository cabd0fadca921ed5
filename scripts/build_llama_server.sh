#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` and `llama-bench` (CPU only, one cmake build) for the slow tests
# (bench-server, measure through llama-bench), from the llama.cpp source that the llama-cpp-python source
# package vendors (vendor/llama.cpp). The version is pinned in one place, scripts/llama_cpp_version.txt;
# llama-cpp-python itself is not installed for this (it is the optional `llamacpp` extra). No network
# beyond PyPI: the web-UI assets are neither built (npm) nor downloaded; the server then serves its API
# with an empty UI table.
#
# The binary is cached OUTSIDE the clone, keyed by version, because CI starts from a fresh clone:
#   ${TOKSPEED_CACHE:-~/.cache/tokspeed}/llama-server-<version>/llama-server
# A cached binary makes this a no-op. Prints the binary's path on stdout (the last line).
#
# Usage: bash scripts/build_llama_server.sh [VERSION]   (default: scripts/llama_cpp_version.txt)
# Env: TOKSPEED_BUILD_JOBS (default 2); LLAMA_CPP_PYTHON_SDIST=path/to/llama_cpp_python-VERSION.tar.gz
# uses a source package already downloaded.
set -euo pipefail
# shellcheck source=scripts/ticker.sh
source "$(dirname "$0")/ticker.sh"

VERSION="${1:-$(tr -d '[:space:]' <"$(dirname "$0")/llama_cpp_version.txt")}"
if [ -z "$VERSION" ]; then
  echo "build_llama_server: no VERSION given and scripts/llama_cpp_version.txt is empty" >&2
  exit 2
fi
CACHE="${TOKSPEED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokspeed}"
DEST="$CACHE/llama-server-$VERSION"
if [ -x "$DEST/llama-server" ]; then
  echo "build_llama_server: cached $DEST/llama-server" >&2
  echo "$DEST/llama-server"
  exit 0
fi

JOBS="${TOKSPEED_BUILD_JOBS:-2}"
echo "build_llama_server: building llama.cpp's llama-server $VERSION (CPU, -j$JOBS) into $DEST;" \
     "once per version: ~11 CPU-minutes, ~6-8 min on 2 idle cores" >&2
# The build tree lives in the cache too, so a build cut short (CI timeout, Ctrl-C) resumes where it
# stopped; it is removed once the binary is in place.
WORK="$CACHE/build-$VERSION"
mkdir -p "$WORK"
START=$(date +%s)

if ls "$WORK"/llama_cpp_python-*.tar.gz >/dev/null 2>&1; then
  :  # fetched by an earlier, unfinished build
elif [ -n "${LLAMA_CPP_PYTHON_SDIST:-}" ]; then
  cp "$LLAMA_CPP_PYTHON_SDIST" "$WORK/"
else
  echo "build_llama_server: fetching the llama-cpp-python $VERSION source package from PyPI (~75 MB)" >&2
  with_ticker "download" python3 -m pip download -q "llama-cpp-python==$VERSION" --no-deps --no-binary :all: -d "$WORK" >&2
fi
[ -d "$(echo "$WORK"/llama_cpp_python-*/)" ] || tar -xzf "$WORK"/llama_cpp_python-*.tar.gz -C "$WORK"
SRC="$(echo "$WORK"/llama_cpp_python-*/vendor/llama.cpp)"
[ -f "$SRC/tools/server/CMakeLists.txt" ] || { echo "build_llama_server: no tools/server in $SRC" >&2; exit 1; }

echo "build_llama_server: cmake (CPU only, no web UI, no curl/ssl), -j$JOBS" >&2
GEN=()
if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi
cmake -S "$SRC" -B "$WORK/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_APP=OFF >"$WORK/cmake.log" 2>&1 || { tail -40 "$WORK/cmake.log" >&2; exit 1; }
# one build for both binaries: llama-bench (the tool the public tables were measured with) shares the ggml and
# llama libraries with llama-server, so it adds one source file to compile
TICK_LOG="$WORK/build.log" with_ticker "cmake --build llama-server llama-bench" \
  cmake --build "$WORK/build" --target llama-server llama-bench -j "$JOBS" \
  || { tail -40 "$WORK/build.log" >&2; exit 1; }

BIN="$(find "$WORK/build" -name llama-server -type f -perm -u+x | head -1)"
[ -n "$BIN" ] || { echo "build_llama_server: the build made no llama-server binary" >&2; exit 1; }
mkdir -p "$CACHE"
TMPDEST="$(mktemp -d "$CACHE/.llama-server-$VERSION.XXXXXX")"
cp "$BIN" "$TMPDEST/llama-server"
BENCH="$(find "$WORK/build" -name llama-bench -type f -perm -u+x | head -1)"
[ -z "$BENCH" ] || cp "$BENCH" "$TMPDEST/llama-bench"
echo "$VERSION" >"$TMPDEST/VERSION"
rm -rf "$DEST"
mv "$TMPDEST" "$DEST"  # atomic: a half-copied binary is never found by the test
rm -rf "$WORK"
echo "build_llama_server: built $DEST/llama-server in $(( $(date +%s) - START )) s" >&2
echo "$DEST/llama-server"
