#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` from the sources vendored in the pinned
# llama-cpp-python sdist (PyPI is the only source this machine reaches), once per
# version: the binary is cached outside the checkout, so a rerun takes seconds.
#
#   scripts/build-llama-server.sh            # prints the path of the binary
#   LLAMA_CPP_PYTHON_VERSION=X scripts/build-llama-server.sh
#   COMAL_CACHE=/some/dir scripts/build-llama-server.sh
#
# The live suite (`pytest -m live`) finds the binary through the printed path
# (exported by .ci/run as COMAL_LLAMA_SERVER).
set -euo pipefail

PINNED="$(sed -n 's/^LLAMA_CPP_PYTHON_VERSION=//p' "$(dirname "$0")/live.env")"
VERSION="${LLAMA_CPP_PYTHON_VERSION:-$PINNED}"
CACHE="${COMAL_CACHE:-/var/cache/comal}"
DEST="$CACHE/llama-server-$VERSION"
BIN="$DEST/bin/llama-server"
# SmolLM2's own template renders no tools; the live suite serves it with llama.cpp's copy of
# Qwen2.5's ChatML template (the same special tokens), which does, so tool_choice applies.
TEMPLATE="$DEST/share/Qwen-Qwen2.5-7B-Instruct.jinja"
PIP="${PIP:-python3 -m pip}"

if [ -x "$BIN" ] && [ -s "$TEMPLATE" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "$BIN"
  exit 0
fi

need() { command -v "$1" >/dev/null 2>&1; }
if ! need cmake || ! need g++ || ! need make; then
  if need apt-get; then
    (apt-get update -qq && apt-get install -y -qq cmake g++ make) >&2
  else
    echo "build-llama-server: cmake, g++ and make are needed" >&2
    exit 1
  fi
fi

mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/build-$VERSION.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# Only llama-cpp-python comes as its sdist; pip's build tools (for its metadata) stay wheels.
$PIP download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d "$WORK" >&2
tar -xzf "$WORK/llama_cpp_python-$VERSION.tar.gz" -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"

# Static, CPU-only, no network features: the server is the only target built.
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  -DGGML_NATIVE=ON >&2
cmake --build "$WORK/build" --target llama-server -j "$(nproc)" >&2

# Install atomically: a half-finished build never looks cached.
mkdir -p "$WORK/out/bin" "$WORK/out/share"
cp "$WORK/build/bin/llama-server" "$WORK/out/bin/"
cp "$SRC/models/templates/$(basename "$TEMPLATE")" "$WORK/out/share/"
echo "$VERSION" >"$WORK/out/VERSION"
rm -rf "$DEST"
mv "$WORK/out" "$DEST"
echo "$BIN"
