#!/bin/sh
# Rebuild the test kernels' SPIR-V with the flags the catalogue uses, for
# Vulkan 1.1 (affine also for 1.2 and 1.3: affine_vk12.spv, affine_vk13.spv);
# the hand-written modules (*.spvasm) are assembled for Vulkan 1.1.
# coopmat.comp needs a glslc that knows GL_KHR_cooperative_matrix: it is
# built with $VKC_GLSLC_COOPMAT (a program's path; default glslc), and kept as
# committed where that compiler lacks the extension.
set -eu
cd "$(dirname "$0")"
for src in *.comp; do
    case "$src" in
    wgperm.comp) continue ;; # below, once per assignment of IDs
    coopmat.comp) continue ;; # below, with a newer glslc
    esac
    glslc -O --target-env=vulkan1.1 "$src" -o "${src%.comp}.spv"
done
if ! "${VKC_GLSLC_COOPMAT:-glslc}" -O --target-env=vulkan1.1 coopmat.comp -o coopmat.spv.new 2>/dev/null; then
    echo "gen.sh: ${VKC_GLSLC_COOPMAT:-glslc} does not know GL_KHR_cooperative_matrix: coopmat.spv kept (set VKC_GLSLC_COOPMAT, see scripts/coopmat-device.sh)" >&2
    rm -f coopmat.spv.new
else
    mv coopmat.spv.new coopmat.spv
fi
for env in 1.2 1.3; do
    glslc -O --target-env=vulkan$env affine.comp -o "affine_vk$(echo $env | tr -d .).spv"
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
# twoentries: two HLSL entry points compiled apart and linked into one
# module.
tmp=$(mktemp -d)
for entry in twice negate; do
    glslc -x hlsl -fshader-stage=compute -fentry-point=$entry --target-env=vulkan1.1 -O twoentries.hlsl -o "$tmp/$entry.spv"
done
spirv-link --target-env vulkan1.1 "$tmp/twice.spv" "$tmp/negate.spv" -o twoentries.spv
rm -r "$tmp"
