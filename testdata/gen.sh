#!/bin/sh
# Rebuild the test kernels' SPIR-V with the flags the catalogue uses; the
# hand-written modules (*.spvasm) are assembled for the same environment.
set -eu
cd "$(dirname "$0")"
for src in *.comp; do
    glslc -O --target-env=vulkan1.1 "$src" -o "${src%.comp}.spv"
done
for src in *.spvasm; do
    spirv-as --target-env vulkan1.1 "$src" -o "${src%.spvasm}.spv"
done
