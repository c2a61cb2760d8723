#!/usr/bin/env bash
# Sets up the device vkc's cooperative-matrix code is tested on: a Debian 13
# root (debootstrap) holding Mesa 26's lavapipe from trixie-backports, a CPU
# Vulkan device with VK_KHR_cooperative_matrix, which Debian 12's Mesa 22.3
# lacks; the Khronos validation layer; glslc 2025 (which compiles
# GL_KHR_cooperative_matrix; Debian 12's does not); and the C toolchain and
# SPIRV-Tools 2025 that vkc is built against inside it (Debian 12's
# SPIRV-Tools 2023.1 does not know cooperative matrices, so a vkc built
# there refuses their modules). scripts/coopmat-test.sh runs the tests in
# it; scripts/glslc-coopmat.sh runs its glslc from outside. glslc is pinned:
# the +coopmat modules are committed as this glslc writes them.
#
# Prints the root's path (its last line of output). Idempotent: a root
# set up before (its stamp file) is reused; one left half-made is made
# again, but only a directory this script made (its marker file) or an
# empty one is ever removed, and never one with anything mounted inside.
# One run at a time (a lock beside the root). Needs root (debootstrap,
# chroot) and Debian's mirror ($VKC_DEBIAN_MIRROR, default
# http://deb.debian.org/debian). VKC_COOPMAT_ROOT moves the root (default
# /var/cache/vkc/debian13).
set -euo pipefail

say() { printf 'coopmat-device: %s\n' "$*" >&2; }
die() { printf 'coopmat-device: error: %s\n' "$*" >&2; exit 1; }

root=$(realpath -m "${VKC_COOPMAT_ROOT:-/var/cache/vkc/debian13}")
[ "$root" != / ] || die "VKC_COOPMAT_ROOT may not be /"
mirror=${VKC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
marker=$root/.vkc-coopmat-root
made=$root/.vkc-coopmat-debootstrapped
stamp=$root/.vkc-coopmat-ready
packages=(
    mesa-vulkan-drivers libvulkan1 vulkan-validationlayers
    glslc=2025.2-1 libshaderc1=2025.2-1 spirv-tools
    gcc g++ libc6-dev libvulkan-dev pkg-config
)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ]; then
    printf '%s\n' "$root"
    exit 0
fi
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot)"
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9

# mounted_inside reports whether anything is mounted at or under $root
# (field 2 of /proc/mounts, compared exactly; spaces there are \040).
mounted_inside() {
    local escaped=${root// /\\040}
    awk -v r="$escaped" '$2 == r || index($2, r "/") == 1 { found = 1 } END { exit !found }' /proc/mounts
}

if [ ! -f "$made" ]; then
    if mounted_inside; then
        die "$root has mounts inside it (an interrupted scripts/coopmat-test.sh?): unmount them first"
    fi
    if [ -e "$root" ] && [ ! -f "$marker" ] && [ -n "$(ls -A "$root" 2>/dev/null)" ]; then
        die "$root exists and was not made by this script: remove it or set VKC_COOPMAT_ROOT"
    fi
    if ! command -v debootstrap >/dev/null 2>&1; then
        say "apt-get install debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2 ||
            die "could not install debootstrap"
    fi
    say "debootstrap Debian 13 (trixie) into $root"
    rm -rf "$root"
    mkdir -p "$root"
    touch "$marker"
    debootstrap --variant=minbase trixie "$root" "$mirror" >&2 || die "debootstrap failed"
    touch "$made"
fi
printf 'deb %s trixie-backports main\n' "$mirror" >"$root/etc/apt/sources.list.d/backports.list"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
say "apt-get install ${packages[*]} (Mesa from trixie-backports)"
chroot "$root" apt-get update -q >&2
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -t trixie-backports "${packages[@]}" >&2 || die "apt-get install in $root failed"
printf '%s\n' "${packages[*]}" >"$stamp"
printf '%s\n' "$root"
