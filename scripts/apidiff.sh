#!/usr/bin/env bash
# Guards the public API of vkc's stable packages against accidental breaks,
# with golang.org/x/exp/cmd/apidiff (a tool of go.mod, run as go tool apidiff).
#
#   bash scripts/apidiff.sh                   check the tree against the last release
#   bash scripts/apidiff.sh -release vX.Y.Z   record the tree's API as release vX.Y.Z
#
# The API of each release is kept in the repository as apidiff's export data,
# api/vX.Y.Z/<package>.export, so the check needs no tags and no history: a
# fresh shallow clone has everything. The last release is the highest version
# under api/.
#
# The check fails when a stable package has an incompatible change, unless
# CHANGELOG.md records it: its newest version heading ("## vX.Y.Z" or
# "## [vX.Y.Z]") must be a bump over the last release that allows a break
# (the minor version while the major is 0, the major after that) and its
# section must have a "### Breaking" heading whose entries name every
# changed identifier (as apidiff prints it, e.g. Open or Buffer.Close).
# Compatible changes (additions) are listed and pass.
#
# -release writes the current tree's API as the base of vX.Y.Z, which must
# have its heading in CHANGELOG.md. Rerunning it for the same version
# replaces that base (do so until the version is tagged).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The packages whose API is promised: the root package only. vk/, alloc/,
# capture/, recorder/ and shaders/ serve it and change with it.
stable_packages=(github.com/vkcompute/vkc)

die() { printf 'apidiff: %s\n' "$*" >&2; exit 1; }

if ! command -v go >/dev/null 2>&1; then
    export PATH="$PATH:${VKC_GOROOT:-/usr/local/go}/bin"
fi

# run_apidiff runs the tool with -trimpath, so that the export data names
# files by module path (github.com/vkcompute/vkc/buffer.go) rather than by
# where this checkout happens to be: the recorded API is then the same bytes
# from any clone.
run_apidiff() { GOFLAGS="${GOFLAGS:-} -trimpath" go tool apidiff "$@"; }

# export_file maps an import path to its file under a release directory.
export_file() { printf '%s/%s.export\n' "$1" "$(printf '%s' "$2" | tr '/' '_')"; }

# version_parts prints "MAJOR MINOR PATCH" of vX.Y.Z, or fails.
version_parts() {
    [[ $1 =~ ^v([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || return 1
    printf '%s %s %s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}"
}

# changelog_versions prints the version of each "## vX.Y.Z" or
# "## [vX.Y.Z]" heading of CHANGELOG.md, newest (topmost) first.
changelog_versions() {
    [ -f CHANGELOG.md ] || return 0
    sed -n -E 's/^## \[?(v[0-9]+\.[0-9]+\.[0-9]+)\]?([[:space:]].*)?$/\1/p' CHANGELOG.md
}

# breaking_section prints the lines under "### Breaking" (any case) in the
# section of version $1, up to the next heading of level 2 or 3.
breaking_section() {
    awk -v want="$1" '
        /^## / {
            v = $2; gsub(/[\[\]]/, "", v)
            in_version = (v == want); in_breaking = 0; next
        }
        /^### / { in_breaking = in_version && tolower($2) == "breaking"; next }
        in_breaking { print }
    ' CHANGELOG.md
}

record_release() {
    local version=$1
    version_parts "$version" >/dev/null || die "-release $version: want vMAJOR.MINOR.PATCH"
    changelog_versions | grep -qx -- "$version" ||
        die "CHANGELOG.md has no '## $version' heading: describe the release before recording its API"
    local dir="api/$version"
    rm -rf "$dir"
    mkdir -p "$dir"
    local pkg
    for pkg in "${stable_packages[@]}"; do
        run_apidiff -w "$(export_file "$dir" "$pkg")" "$pkg"
        printf 'apidiff: wrote the API of %s as %s\n' "$pkg" "$(export_file "$dir" "$pkg")"
    done
}

# last_release prints the highest version with a directory under api/.
last_release() {
    local d
    for d in api/v*/; do
        [ -d "$d" ] || continue
        d=${d%/}
        d=${d#api/}
        version_parts "$d" >/dev/null && printf '%s\n' "$d"
    done | sort -V | tail -n 1
}

# allows_break says whether version $2 may break the API of release $1.
allows_break() {
    local bmaj bmin bpat nmaj nmin npat
    read -r bmaj bmin bpat < <(version_parts "$1")
    read -r nmaj nmin npat < <(version_parts "$2")
    if [ "$bmaj" -eq 0 ]; then
        [ "$nmaj" -gt 0 ] || [ "$nmin" -gt "$bmin" ]
    else
        [ "$nmaj" -gt "$bmaj" ]
    fi
}

check() {
    local base
    base=$(last_release)
    [ -n "$base" ] || die "no release under api/: record one with 'bash scripts/apidiff.sh -release vX.Y.Z'"
    local pkg file report incompatible=() line
    for pkg in "${stable_packages[@]}"; do
        file=$(export_file "api/$base" "$pkg")
        [ -f "$file" ] || die "$file is missing: rerun 'bash scripts/apidiff.sh -release $base'"
        report=$(run_apidiff "$file" "$pkg") || die "go tool apidiff failed on $pkg"
        if [ -z "$report" ]; then
            printf 'apidiff: %s: no change since %s\n' "$pkg" "$base"
            continue
        fi
        printf 'apidiff: %s: changes since %s:\n%s\n' "$pkg" "$base" "$report"
        # apidiff prints "Incompatible changes:" then "- NAME: what", then
        # possibly "Compatible changes:"; keep the names of the first group,
        # methods as Type.Method ("(*Buffer[T]).Len" is Buffer.Len).
        while IFS= read -r line; do
            incompatible+=("$line")
        done < <(printf '%s\n' "$report" | awk '
            /^Incompatible changes:/ { on = 1; next }
            /^[A-Za-z].*:$/ { on = 0 }
            on && /^- / { sub(/^- /, ""); sub(/: .*/, ""); print }
        ' | sed -E 's/^\(\*?([A-Za-z0-9_]+)(\[[^]]*\])?\)/\1/' | sort -u)
    done
    if [ ${#incompatible[@]} -eq 0 ]; then
        printf 'apidiff: compatible with %s\n' "$base"
        return 0
    fi
    local newest
    newest=$(changelog_versions | head -n 1)
    if [ -z "$newest" ] || [ "$newest" = "$base" ] || ! allows_break "$base" "$newest"; then
        die "incompatible change to the API of $base (${incompatible[*]}): bump the version in CHANGELOG.md (a new '## vX.Y.Z' heading on top: the minor version while the major is 0, else the major) and list each change under '### Breaking'"
    fi
    local section name missing=()
    section=$(breaking_section "$newest")
    [ -n "$(printf '%s' "$section" | tr -d '[:space:]')" ] ||
        die "incompatible change to the API of $base (${incompatible[*]}): CHANGELOG.md's $newest has no entries under '### Breaking'"
    for name in "${incompatible[@]}"; do
        grep -qF -- "$name" <<<"$section" || missing+=("$name")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        die "CHANGELOG.md's '### Breaking' of $newest does not name: ${missing[*]}"
    fi
    printf 'apidiff: incompatible changes since %s are recorded under %s ### Breaking\n' "$base" "$newest"
}

case "${1:-}" in
"") check ;;
-release)
    [ $# -eq 2 ] || die "usage: bash scripts/apidiff.sh -release vX.Y.Z"
    record_release "$2"
    ;;
*) die "usage: bash scripts/apidiff.sh [-release vX.Y.Z]" ;;
esac
