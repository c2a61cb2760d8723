#!/bin/sh
# Rebuild the test kernels' SPIR-V with the flags the catalogue uses, for
# Vulkan 1.1 unless the name says otherwise (NAME_vk12.comp for Vulkan 1.2,
# NAME_vk13.comp for 1.3); the hand-written modules (*.spvasm) are
# assembled for Vulkan 1.1.
set -eu
cd "$(dirname "$0")"
for src in *.comp; do
    case $src in
    wgperm.comp) continue ;; # below, once per assignment of IDs
    *_vk12.comp) env=vulkan1.2 ;;
    *_vk13.comp) env=vulkan1.3 ;;
    *) env=vulkan1.1 ;;
    esac
    glslc -O --target-env=$env "$src" -o "${src%.comp}.spv"
done
# wgperm_XYZ: every assignment of specialization-constant IDs 0, 1, 2 to
# the workgroup's axes, each ID used at most once (n: not specializable).
for x in n 0 1 2; do
    for y in n 0 1 2; do
        for z in n 0 1 2; do
            if [ -n "$(printf '%s\n' $x $y $z | grep -v n | sort | uniq -d)" ]; then
                continue
            fi
            defs=""
            [ $x = n ] || defs="$defs -DX_ID=$x"
            [ $y = n ] || defs="$defs -DY_ID=$y"
            [ $z = n ] || defs="$defs -DZ_ID=$z"
            glslc -O --target-env=vulkan1.1 $defs wgperm.comp -o "wgperm_$x$y$z.spv"
        done
    done
done
for src in *.spvasm; do
    spirv-as --target-env vulkan1.1 "$src" -o "${src%.spvasm}.spv"
done
