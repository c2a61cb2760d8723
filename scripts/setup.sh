#!/usr/bin/env bash
# Installs what building and testing vkc need on Debian 12 or Ubuntu
# (24.04, 26.04), run as root or by a user with password-less sudo:
# a C toolchain for cgo, the Vulkan loader and headers, Mesa's lavapipe (the
# CPU Vulkan device every test runs on), the Khronos validation layer, glslc
# and spirv-tools for the shaders, spirv-cross (the independent reader the
# shaders package's layout test checks its block layouts against), the X11 headers GLFW (cmd/vkview) builds
# against, Xvfb for vkview's windowed tests, OpenBLAS (the CPU sgemm
# vkbench's matmul suite shows beside vkc's), debootstrap (for the Debian 13
# root scripts/coopmat-device.sh makes, the cooperative-matrix tests'
# device), and Go when it is not there.
#
# Idempotent and quick to rerun: apt runs only when a package is missing, and
# Go is installed only when neither PATH nor /usr/local/go/bin has it.
# Go comes from the Go module proxy named by $GOPROXY (default, as Go's:
# proxy.golang.org; the toolchain module
# golang.org/toolchain), never from any other download. VKC_GOROOT moves
# where it goes (default /usr/local/go).
set -euo pipefail

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

packages=(
    ca-certificates gcc libc6-dev pkg-config
    mesa-vulkan-drivers libvulkan1 libvulkan-dev vulkan-validationlayers vulkan-tools
    glslc spirv-tools spirv-cross git curl
    libx11-dev libxrandr-dev libxinerama-dev libxcursor-dev libxi-dev libxxf86vm-dev libgl-dev xvfb
    libopenblas0 debootstrap
)

# The Go release the module asks for ("go 1.26.8" in go.mod).
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
goroot=${VKC_GOROOT:-/usr/local/go}
go_version=$(sed -n 's/^go \([0-9][0-9.]*\)$/\1/p' "$repo_root/go.mod")
[ -n "$go_version" ] || die "no 'go' line in $repo_root/go.mod"

is_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# as_root runs a command as root: directly when this script is root, else
# through sudo when it needs no password (CI runners, cloud images).
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo -n env DEBIAN_FRONTEND=noninteractive "$@"
    else
        return 1
    fi
}

apt_install() {
    as_root true || die "packages missing ($*): run this script as root (or with password-less sudo), or install them"
    export DEBIAN_FRONTEND=noninteractive
    say "apt-get update"
    as_root apt-get update -q
    say "apt-get install $*"
    as_root apt-get install -y -q --no-install-recommends "$@"
}

install_packages() {
    if ! command -v dpkg-query >/dev/null 2>&1; then
        say "not a Debian system: skipping apt; make sure these are installed: ${packages[*]}"
        return
    fi
    local missing=()
    for p in "${packages[@]}"; do
        is_installed "$p" || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        say "all ${#packages[@]} system packages already installed"
        return
    fi
    apt_install "${missing[@]}"
}

# first_proxy prints the first http(s) entry of $GOPROXY, if any; unset or
# empty, it is Go's own default (proxy.golang.org), as on a fresh machine.
first_proxy() {
    local entry
    IFS=',|' read -r -a entries <<<"${GOPROXY:-https://proxy.golang.org,direct}"
    for entry in "${entries[@]}"; do
        case "$entry" in
        http://* | https://*) printf '%s\n' "${entry%/}"; return 0 ;;
        esac
    done
    return 1
}

install_go() {
    if command -v go >/dev/null 2>&1; then
        say "go found: $(go version)"
        return
    fi
    if [ -x "$goroot/bin/go" ]; then
        say "go found: $("$goroot/bin/go" version) (add $goroot/bin to PATH)"
        return
    fi
    local proxy
    proxy=$(first_proxy) || die "Go is missing and GOPROXY names no module proxy to fetch go$go_version from; set GOPROXY to the Go module proxy's URL or install Go $go_version at $goroot"
    [ -w "$(dirname "$goroot")" ] || die "Go is missing and $(dirname "$goroot") is not writable: run as root to install it at $goroot"
    local arch
    case "$(uname -m)" in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "Go is missing and no toolchain is known for $(uname -m)" ;;
    esac
    if ! command -v unzip >/dev/null 2>&1; then
        command -v dpkg-query >/dev/null 2>&1 || die "Go is missing and unzip is not installed"
        apt_install unzip
    fi
    local version="v0.0.1-go$go_version.linux-$arch"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    say "installing Go $go_version from the module proxy (golang.org/toolchain@$version)"
    curl -fsSL --retry 3 -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/$version.zip" ||
        die "could not fetch golang.org/toolchain@$version from $proxy"
    unzip -q "$tmp/go.zip" -d "$tmp/x"
    local tree="$tmp/x/golang.org/toolchain@$version"
    # Module zips do not keep file modes: make the commands executable.
    chmod +x "$tree/bin/"* "$tree/pkg/tool/"*/*
    rm -rf "$goroot"
    mv "$tree" "$goroot"
    say "installed $("$goroot/bin/go" version) at $goroot (add $goroot/bin to PATH)"
}

install_packages
install_go
say "done"
