#!/usr/bin/env bash
# Builds vkbench and runs it, passing every argument through: it measures
# what vkc costs against the plain-C Vulkan baseline built into it, on this
# machine, in one run (bash scripts/bench.sh -h lists the flags).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh >&2
if ! command -v go >/dev/null 2>&1; then
    export PATH="$PATH:${VKC_GOROOT:-/usr/local/go}/bin"
fi

bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
printf 'bench: go build ./cmd/vkbench\n' >&2
go build -o "$bin_dir/vkbench" ./cmd/vkbench
"$bin_dir/vkbench" "$@"
