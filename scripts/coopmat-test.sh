#!/usr/bin/env bash
# Runs vkc's cooperative-matrix tests on a device that has them: Mesa 26's
# lavapipe in the Debian 13 root scripts/coopmat-device.sh sets up (Debian
# 12's lavapipe, every other test's device, lacks VK_KHR_cooperative_matrix).
# The test binaries of ops and blackbox are built inside the root, with
# this system's Go and module cache bind-mounted, against the root's
# SPIRV-Tools (which knows cooperative matrices), then run there with the
# validation layer on: the cooperative-matrix tests of ops, and every
# Float16 Matmul and MatmulInt8 test (the cooperative-matrix kernels among
# the variants each one runs), and the cooperative-matrix kernel (which the root's
# validator checks at LoadKernel) and its refusal. It fails unless the tests that need the device ran
# and passed: a device that lost the extension is an error, not a skip.
# Needs root; run from anywhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
[ "$(id -u)" -eq 0 ] || { echo "coopmat-test: needs root (mount and chroot)" >&2; exit 1; }
if ! command -v go >/dev/null 2>&1; then
    export PATH="$PATH:${VKC_GOROOT:-/usr/local/go}/bin"
fi
root=$(bash scripts/coopmat-device.sh)
goroot=$(go env GOROOT)
modcache=$(go env GOMODCACHE)
go mod download # what the build inside needs, while the proxy is reachable

mounts=()
unbind() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" ||
            echo "coopmat-test: warning: could not unmount ${mounts[i]}" >&2
    done
}
trap unbind EXIT
bind() {
    mkdir -p "$root$2"
    mount --bind "$1" "$root$2"
    mounts+=("$root$2")
}
bind /proc /proc
bind /dev /dev
bind "$goroot" /opt/vkc/go
bind "$modcache" /opt/vkc/modcache
bind "$repo" /opt/vkc/src

in_root() {
    chroot "$root" env -i PATH=/opt/vkc/go/bin:/usr/bin:/bin HOME=/root \
        GOROOT=/opt/vkc/go GOMODCACHE=/opt/vkc/modcache GOPROXY=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false \
        VKC_VALIDATION=1 LP_NUM_THREADS=0 "$@"
}

in_root sh -c 'cd /opt/vkc/src && go test -c -o /tmp/vkc-coopmat/ ./ops ./blackbox'
log=$(mktemp)
trap 'unbind; rm -f "$log"' EXIT
run() { # package, -test.run pattern
    in_root sh -c "cd /opt/vkc/src/$1 && /tmp/vkc-coopmat/$1.test -test.count=1 -test.v -test.run '$2'" >>"$log" 2>&1 || {
        grep -vE '^=== (RUN|PAUSE|CONT|NAME)' "$log" | tail -60
        exit 1
    }
}
run ops 'Coop|Float16|MatmulInt8'
run blackbox 'CooperativeMatrix|IntegerDotProduct|ModuleNeedingAFeature'
for t in TestMatmulCooperativeMatricesMatchTheReference TestMatmulCoopMatLongKSumsEveryTerm \
    TestMatmulInt8CooperativeMatricesMatchExactSums TestCooperativeMatrixKernelRuns TestCooperativeMatrixKernelRefusedWithoutTheFeature; do
    if ! grep -q -- "--- PASS: $t " "$log"; then
        grep -A3 -- "--- .*: $t " "$log" || true
        echo "coopmat-test: $t did not pass on the cooperative-matrix device" >&2
        exit 1
    fi
done
grep -E 'matmul_coopmat_test.go:[0-9]+: (f16|f32|K of)' "$log" | sed 's/^ */coopmat-test: /'
echo "coopmat-test: passed ($(grep -c -- '--- PASS' "$log") tests and subtests)"
