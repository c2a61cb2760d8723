#!/bin/sh
# Compile shaders/glsl/*.comp into shaders/spv/*.spv with glslc, the exact
# command the staleness test in shaders/ replays. Run through `go generate ./shaders`.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v glslc >/dev/null 2>&1; then
    echo "gen-shaders: glslc not found on PATH; install glslc (Debian/Ubuntu: apt-get install glslc, or the Vulkan SDK)" >&2
    exit 1
fi
mkdir -p "$here/shaders/spv"
for src in "$here"/shaders/glsl/*.comp; do
    name=$(basename "$src" .comp)
    glslc -O --target-env=vulkan1.1 "$src" -o "$here/shaders/spv/$name.spv"
done
# Drop modules whose source is gone, so every .spv keeps its .comp.
for spv in "$here"/shaders/spv/*.spv; do
    name=$(basename "$spv" .spv)
    [ -f "$here/shaders/glsl/$name.comp" ] || rm -f "$spv"
done
