#!/bin/sh
# Rebuild the test kernels' SPIR-V with the flags the catalogue uses.
set -eu
cd "$(dirname "$0")"
for src in *.comp; do
    glslc -O --target-env=vulkan1.1 "$src" -o "${src%.comp}.spv"
done
