#!/bin/sh
# Compile every kernel variant listed in variants.txt into spv/ with glslc.
# Run through `go generate ./ops/internal/kernels`; the staleness test
# replays the same command for each line.
set -eu
cd "$(dirname "$0")"
if ! command -v glslc >/dev/null 2>&1; then
    echo "gen.sh: glslc not found on PATH (Debian/Ubuntu: apt-get install glslc, or the Vulkan SDK)" >&2
    exit 1
fi
mkdir -p spv
rm -f spv/*.spv
grep -v '^#' variants.txt | while read -r name src defines; do
    # shellcheck disable=SC2086 # the defines are words
    glslc -O --target-env=vulkan1.1 $defines "glsl/$src" -o "spv/$name.spv"
done
