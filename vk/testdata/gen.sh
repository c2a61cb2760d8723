#!/bin/sh
# Rebuild the vk package's test modules: GLSL kernels with glslc (the flags
# the catalogue uses), hand-written SPIR-V assembly with spirv-as (both from
# the Debian packages glslc and spirv-tools). The .spvasm modules are
# meant to be invalid, so they are assembled without validation.
set -eu
cd "$(dirname "$0")"
for src in *.comp; do
    glslc -O --target-env=vulkan1.1 "$src" -o "${src%.comp}.spv"
done
# axpy for the other Vulkan targets too (SPIR-V 1.0, 1.5, 1.6), for the
# checks of a module's version against the device's.
for env in 1.0 1.2 1.3; do
    glslc -O --target-env=vulkan$env axpy.comp -o "axpy_vk$(echo $env | tr -d .).spv"
done
for src in *.spvasm; do
    spirv-as --target-env vulkan1.1 "$src" -o "${src%.spvasm}.spv"
done
