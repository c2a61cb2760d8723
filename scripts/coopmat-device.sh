#!/usr/bin/env bash
# Sets up the device vkc's cooperative-matrix code is tested on: a Debian 13
# root (debootstrap) holding Mesa 26's lavapipe from trixie-backports, a CPU
# Vulkan device with VK_KHR_cooperative_matrix, which Debian 12's Mesa 22.3
# lacks; the Khronos validation layer; glslc 2025 (which compiles
# GL_KHR_cooperative_matrix; Debian 12's does not); and the C toolchain and
# SPIRV-Tools 2025 that vkc is built against inside it (Debian 12's
# SPIRV-Tools 2023.1 does not know cooperative matrices, so a vkc built
# there refuses their modules). scripts/coopmat-test.sh runs the tests in
# it; scripts/glslc-coopmat.sh runs its glslc from outside.
#
# Prints the root's path. Idempotent: a root set up before (its stamp
# file) is reused. Needs root (debootstrap, chroot) and Debian's mirror
# ($VKC_DEBIAN_MIRROR, default http://deb.debian.org/debian).
# VKC_COOPMAT_ROOT moves the root (default /var/cache/vkc/debian13).
set -euo pipefail

say() { printf 'coopmat-device: %s\n' "$*" >&2; }
die() { printf 'coopmat-device: error: %s\n' "$*" >&2; exit 1; }

root=${VKC_COOPMAT_ROOT:-/var/cache/vkc/debian13}
mirror=${VKC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
stamp=$root/.vkc-coopmat-ready
packages=(
    mesa-vulkan-drivers libvulkan1 vulkan-validationlayers
    glslc spirv-tools
    gcc g++ libc6-dev libvulkan-dev pkg-config
)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ]; then
    printf '%s\n' "$root"
    exit 0
fi
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot)"
if ! command -v debootstrap >/dev/null 2>&1; then
    say "apt-get install debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2 ||
        die "could not install debootstrap"
fi
if [ ! -x "$root/usr/bin/apt-get" ]; then
    # A half-made root is removed and made again; never one with something
    # mounted inside (an interrupted coopmat-test.sh binds the source tree).
    if grep -q " $root/" /proc/mounts; then
        die "$root has mounts inside it (an interrupted scripts/coopmat-test.sh?): unmount them first"
    fi
    say "debootstrap Debian 13 (trixie) into $root"
    rm -rf "$root"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase trixie "$root" "$mirror" >&2 || die "debootstrap failed"
fi
printf 'deb %s trixie-backports main\n' "$mirror" >"$root/etc/apt/sources.list.d/backports.list"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
say "apt-get install ${packages[*]} (Mesa from trixie-backports)"
chroot "$root" apt-get update -q >&2
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -t trixie-backports "${packages[@]}" >&2 || die "apt-get install in $root failed"
printf '%s\n' "${packages[*]}" >"$stamp"
printf '%s\n' "$root"
