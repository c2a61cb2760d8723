#!/usr/bin/env bash
# The project's test command (what CI runs): installs what is missing, then
# checks formatting, vets, checks each function's cyclomatic complexity and
# the public API against the last release, builds and tests the pure-Go
# packages with cgo off, runs every test with the race detector, the
# lock-rank checker and the Khronos validation layer on, runs the
# cooperative-matrix tests on a device that has them (as root: a Debian 13
# root with Mesa 26's lavapipe, scripts/coopmat-test.sh), and gives each fuzz
# target of alloc/, capture/, recorder/ and shaders/ (and ops/ and wgsl/) a
# short run. Aims to finish in under 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
if ! command -v go >/dev/null 2>&1; then
    export PATH="$PATH:${VKC_GOROOT:-/usr/local/go}/bin"
fi

step() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }

# The cooperative-matrix device (a Debian 13 root with Mesa 26's lavapipe,
# scripts/coopmat-device.sh) is set up in the background while the
# checks below run: debootstrap and apt wait on the network, not the CPU.
# It needs root; elsewhere its tests are skipped, saying so.
# Its root's path is the last line it prints. A run that stops early
# stops it too (it also takes a lock, so two never share the root).
coopmat_log=$(mktemp)
coopmat_pid=
stop_coopmat() {
    if [ -n "$coopmat_pid" ]; then
        kill -- -"$coopmat_pid" 2>/dev/null || true # its process group: debootstrap, apt
    fi
    rm -f "$coopmat_log"
}
trap stop_coopmat EXIT
if [ "$(id -u)" -eq 0 ]; then
    setsid bash scripts/coopmat-device.sh >"$coopmat_log" 2>&1 &
    coopmat_pid=$!
fi

step "gofmt -l"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
    printf 'not gofmt-formatted:\n%s\n' "$unformatted" >&2
    exit 1
fi

step "go vet ./..."
go vet ./...

# No function outside the tests may exceed cyclomatic complexity 20: past
# that a function is hard to read and to cover, and it is split instead
# (a table of cases, a named step per concern). Tests and test data are
# left out: a table-driven test is long by nature.
step "cyclomatic complexity at most 20 (go tool gocyclo)"
go tool gocyclo -over 20 -ignore '_test\.go$|(^|/)testdata/' .

# The root package's API against the last release recorded under api/; an
# incompatible change must be recorded in CHANGELOG.md (scripts/apidiff.sh).
step "API compatibility (go tool apidiff)"
bash scripts/apidiff.sh

# The recorder and what it stands on are pure Go: they build, vet and test
# (each fuzz target's seed corpus included, which go test runs as tests)
# without a C toolchain, and none of them may reach package vk. The race
# detector needs cgo on linux, so their -race run is the one below.
pure_pkgs=(./recorder ./recorder/hostdev ./capture ./alloc ./internal/errs ./internal/lockrank)
step "CGO_ENABLED=0: build, vet and test ${pure_pkgs[*]}"
if go list -deps "${pure_pkgs[@]}" | grep -qx 'github.com/vkcompute/vkc/vk'; then
    echo "a pure package imports github.com/vkcompute/vkc/vk:" >&2
    go list -f '{{.ImportPath}}: {{join .Imports " "}}' "${pure_pkgs[@]}" >&2
    exit 1
fi
CGO_ENABLED=0 go build "${pure_pkgs[@]}"
CGO_ENABLED=0 go vet "${pure_pkgs[@]}"
CGO_ENABLED=0 go test -count=1 "${pure_pkgs[@]}"

# Tests that touch the device turn the validation layer on from
# VKC_VALIDATION and fail on any message it prints. LP_NUM_THREADS=0 makes
# lavapipe execute on the submitting thread, which keeps runs steady.
export VKC_VALIDATION=1 LP_NUM_THREADS=0

# The cooperative-matrix modules' staleness is checked with the root's
# glslc (scripts/glslc-coopmat.sh), the one here being too old for them.
if [ "$(id -u)" -eq 0 ]; then
    step "cooperative-matrix device (scripts/coopmat-device.sh)"
    if ! wait "$coopmat_pid"; then
        coopmat_pid=
        cat "$coopmat_log" >&2
        exit 1
    fi
    coopmat_pid=
    VKC_COOPMAT_ROOT=$(tail -n 1 "$coopmat_log")
    export VKC_COOPMAT_ROOT VKC_GLSLC_COOPMAT=$PWD/scripts/glslc-coopmat.sh
    echo "set up at $VKC_COOPMAT_ROOT"
fi

# vkc_lockrank checks the module's lock order on every acquisition
# (internal/lockrank); release builds leave it out. The largest packages
# (blackbox, ops, vkbench) take minutes on lavapipe under -race: a package
# gets 20 minutes, not go test's default 10, so a slower machine is not a
# failure.
step "go test -race -tags vkc_lockrank ./..."
go test -race -count=1 -timeout 20m -tags vkc_lockrank ./...

# matmul_coopmat and cooperative-matrix kernels on a device that has them
# (Mesa 26's lavapipe, in the Debian 13 root): built there, against its
# SPIRV-Tools, and run with the validation layer on.
if [ -n "${VKC_COOPMAT_ROOT:-}" ]; then
    step "cooperative matrices on Mesa 26's lavapipe (scripts/coopmat-test.sh)"
    bash scripts/coopmat-test.sh
else
    step "cooperative matrices: skipped (scripts/coopmat-test.sh needs root)"
fi

# -fuzz takes one target at a time, so each is run on its own. Budgets are
# counts of executions, not durations: with a duration, Go's fuzz
# coordinator before Go 1.27 can report "context deadline exceeded" as a
# failure when time runs out while a worker is mid-call (go.dev/issue/75804),
# a failure with no input behind it. Each count is 10 to 25 seconds on two
# idle cores (measured: the invariant checks after every step and the
# layout reader make an execution dearer than it was); VKC_FUZZTIME (a
# count such as 5000x, or a duration) overrides them all.
fuzz_budget() {
    if [ -n "${VKC_FUZZTIME:-}" ]; then
        echo "$VKC_FUZZTIME"
        return
    fi
    case $1 in
    FuzzAllocator) echo 15000x ;;
    FuzzLedger) echo 30000x ;;
    FuzzStreamCapture) echo 150000x ;;
    FuzzRecorder) echo 15000x ;;
    FuzzReplayMatchesEager) echo 15000x ;;
    FuzzHazards) echo 150000x ;;
    FuzzDecode | FuzzInspect) echo 60000x ;;
    FuzzRepair) echo 100000x ;;
    *) echo 20000x ;;
    esac
}
for pkg in alloc capture recorder shaders ops wgsl; do
    [ -d "$pkg" ] || continue
    targets=$(grep -hoE '^func Fuzz[A-Za-z0-9_]*\(' "$pkg"/*_test.go 2>/dev/null |
        sed -e 's/^func //' -e 's/($//' | sort -u || true)
    if [ -z "$targets" ]; then
        step "no fuzz targets in $pkg/"
        continue
    fi
    for target in $targets; do
        budget=$(fuzz_budget "$target")
        step "fuzz ./$pkg $target for $budget"
        go test -run='^$' -fuzz="^${target}\$" -fuzztime="$budget" \
            -fuzzminimizetime=5s "./$pkg"
    done
done

step "all checks passed"
