#!/bin/sh
# Runs the glslc of the cooperative-matrix test root (scripts/coopmat-device.sh,
# at $VKC_COOPMAT_ROOT, default /var/cache/vkc/debian13) on this system,
# with that root's own loader and libraries: a glslc that knows
# GL_KHR_cooperative_matrix, for VKC_GLSLC_COOPMAT (ops/internal/kernels/gen.sh,
# testdata/gen.sh and the modules' staleness test).
root=${VKC_COOPMAT_ROOT:-/var/cache/vkc/debian13}
libs=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu
exec "$root/lib64/ld-linux-x86-64.so.2" --library-path "$libs" "$root/usr/bin/glslc" "$@"
