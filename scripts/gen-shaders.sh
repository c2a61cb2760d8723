#!/bin/sh
# Compile shaders/glsl/*.comp into shaders/spv/*.spv with glslc, the exact
# commands the staleness test in shaders/ replays. A source with an
# `#ifdef DYNAMIC` line is compiled a second time with -DDYNAMIC into
# <name>_dyn.spv, its variant that reads its scalars from device memory;
# one with an `#ifdef WIDE` line again with -DWIDE into <name>_wide.spv (and,
# with DYNAMIC too, <name>_wide_dyn.spv), its CPU drivers' variant.
# Run through `go generate ./shaders`.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v glslc >/dev/null 2>&1; then
    echo "gen-shaders: glslc not found on PATH; install glslc (Debian/Ubuntu: apt-get install glslc, or the Vulkan SDK)" >&2
    exit 1
fi
mkdir -p "$here/shaders/spv"
rm -f "$here"/shaders/spv/*.spv
for src in "$here"/shaders/glsl/*.comp; do
    name=$(basename "$src" .comp)
    glslc -O --target-env=vulkan1.1 "$src" -o "$here/shaders/spv/$name.spv"
    if grep -q '^#ifdef DYNAMIC' "$src"; then
        glslc -O --target-env=vulkan1.1 -DDYNAMIC "$src" -o "$here/shaders/spv/${name}_dyn.spv"
    fi
    if grep -q '^#ifdef WIDE' "$src"; then
        glslc -O --target-env=vulkan1.1 -DWIDE "$src" -o "$here/shaders/spv/${name}_wide.spv"
        if grep -q '^#ifdef DYNAMIC' "$src"; then
            glslc -O --target-env=vulkan1.1 -DWIDE -DDYNAMIC "$src" -o "$here/shaders/spv/${name}_wide_dyn.spv"
        fi
    fi
done
