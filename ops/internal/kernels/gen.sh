#!/bin/sh
# Compile every kernel variant listed in variants.txt into spv/ with glslc.
# Run through `go generate ./ops/internal/kernels`; the staleness test
# replays the same command for each line. A line marked +coopmat needs a
# glslc that knows GL_KHR_cooperative_matrix: it is built with
# $VKC_GLSLC_COOPMAT (a program's path; default glslc), and where that compiler
# lacks the extension its committed module is kept, with a warning.
set -eu
cd "$(dirname "$0")"
if ! command -v glslc >/dev/null 2>&1; then
    echo "gen.sh: glslc not found on PATH (Debian/Ubuntu: apt-get install glslc, or the Vulkan SDK)" >&2
    exit 1
fi
coopmat_glslc=${VKC_GLSLC_COOPMAT:-glslc}
coopmat_ok=yes
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#version 450\n#extension GL_KHR_cooperative_matrix : require\nlayout(local_size_x = 1) in;\nvoid main() {}\n' >"$probe/p.comp"
"$coopmat_glslc" --target-env=vulkan1.1 "$probe/p.comp" -o "$probe/p.spv" 2>/dev/null || coopmat_ok=no
mkdir -p spv
# Every module goes first, so a variant taken out of variants.txt leaves
# none behind, but those of +coopmat lines this glslc cannot rebuild.
for module in spv/*.spv; do
    [ -e "$module" ] || continue
    if [ "$coopmat_ok" = no ] && grep -q "^$(basename "$module" .spv) .*+coopmat" variants.txt; then
        continue
    fi
    rm -f "$module"
done
grep -v '^#' variants.txt | while read -r name src defines; do
    compiler=glslc
    case "$defines" in
    +coopmat*)
        defines=${defines#+coopmat}
        if [ "$coopmat_ok" = no ]; then
            echo "gen.sh: $coopmat_glslc does not know GL_KHR_cooperative_matrix: spv/$name.spv kept (set VKC_GLSLC_COOPMAT, see scripts/coopmat-device.sh)" >&2
            continue
        fi
        compiler=$coopmat_glslc
        ;;
    esac
    # shellcheck disable=SC2086 # the defines are words
    "$compiler" -O --target-env=vulkan1.1 $defines "glsl/$src" -o "spv/$name.spv"
done
