#!/usr/bin/env bash
# Guards the public API of vkc against accidental breaks, with
# golang.org/x/exp/cmd/apidiff (a tool of go.mod, run as go tool apidiff).
#
#   bash scripts/apidiff.sh                   check the tree against the last release
#   bash scripts/apidiff.sh -release vX.Y.Z   record the tree's API as release vX.Y.Z
#
# The promised API is the root package github.com/vkcompute/vkc. Today it
# owns every type it names, so everything in vk/, alloc/, capture/,
# recorder/ and shaders/ may change freely; a type it re-exported (type T =
# pkg.T) would carry pkg.T's changes into the promise (promised_changes).
#
# The API of each release is kept in the repository as apidiff's export
# data of the whole module, api/vX.Y.Z/module.zip, so the check needs no tags
# and no history: a fresh shallow clone has everything. The last release is
# the highest version under api/.
#
# The check fails when the promised API has an incompatible change, unless
# CHANGELOG.md records it: its newest version heading ("## vX.Y.Z" or
# "## [vX.Y.Z]") must be a bump over the last release that allows a break
# (the minor version while the major is 0, the major after that) and its
# section must have a "### Breaking" heading whose entries name every
# changed identifier as the check prints it (Open, Buffer.Close,
# DeviceInfo.Vendor). Compatible changes, and changes elsewhere in the
# module, are listed and pass.
#
# -release writes the current tree's API as the base of vX.Y.Z, which must
# have its heading in CHANGELOG.md. Rerunning it for the same version
# replaces that base (do so until the version is tagged).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

module=github.com/vkcompute/vkc

die() { printf 'apidiff: %s\n' "$*" >&2; exit 1; }

if ! command -v go >/dev/null 2>&1; then
    export PATH="$PATH:${VKC_GOROOT:-/usr/local/go}/bin"
fi

# run_apidiff runs the tool with -trimpath, so that the export data names
# files by module path (github.com/vkcompute/vkc/buffer.go) rather than by
# where this checkout happens to be: the recorded API is then the same bytes
# from any clone.
run_apidiff() { GOFLAGS="${GOFLAGS:-} -trimpath" go tool apidiff "$@"; }

# base_file is the recorded API of release $1.
base_file() { printf 'api/%s/module.zip\n' "$1"; }

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
    local file
    file=$(base_file "$version")
    rm -rf "api/$version"
    mkdir -p "api/$version"
    run_apidiff -m -w "$file" "$module" 2> >(grep -v '^Ignoring internal package' >&2)
    printf 'apidiff: wrote the API of %s as %s\n' "$module" "$file"
}

# reexported_types prints "PKG.Type NAME" for every type of the module's
# other packages that the root package's API shows, NAME being how a user
# of vkc calls it: the targets of the root's aliases (type NAME = pkg.Type,
# one per line) and, recursively, the types their declarations use
# (fields, method signatures), which keep their own names.
reexported_types() {
    declare -A seen=()
    local queue=() item pkg typ name decl types tok
    while read -r item; do
        [ -n "$item" ] && queue+=("$item")
    done < <(for f in ./*.go; do [[ $f == *_test.go ]] || printf '%s\0' "$f"; done | xargs -0 sed -n -E \
        's/^type ([A-Z][A-Za-z0-9_]*) = ([a-z][a-z0-9_]*)\.([A-Z][A-Za-z0-9_]*)[[:space:]]*(\/\/.*)?$/\2.\3 \1/p' | sort -u)
    while [ ${#queue[@]} -gt 0 ]; do
        item=${queue[0]}
        queue=("${queue[@]:1}")
        read -r typ name <<<"$item"
        [ -z "${seen[$typ]:-}" ] || continue
        seen[$typ]=1
        printf '%s %s\n' "$typ" "$name"
        pkg=${typ%%.*}
        # The declaration and the method signatures, without doc text.
        decl=$(go doc "./$pkg" "${typ#*.}" | grep -v -E '^    |^[[:space:]]*//|^package ' | sed 's|//.*||')
        types=$(go doc -short "./$pkg" | sed -n -E 's/^type ([A-Z][A-Za-z0-9_]*).*/\1/p')
        while read -r tok; do
            if grep -qx -- "$tok" <<<"$types"; then
                queue+=("$pkg.$tok $tok")
            fi
        done < <(grep -oE '\b[A-Z][A-Za-z0-9_]*\b' <<<"$decl" | sort -u)
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
    local bmaj bmin nmaj nmin
    read -r bmaj bmin _ < <(version_parts "$1")
    read -r nmaj nmin _ < <(version_parts "$2")
    if [ "$bmaj" -eq 0 ]; then
        [ "$nmaj" -gt 0 ] || [ "$nmin" -gt "$bmin" ]
    else
        [ "$nmaj" -gt "$bmaj" ]
    fi
}

# promised_changes reads apidiff -m's report on stdin and prints the
# incompatible changes to the promised API, one identifier a line, as a user
# of vkc names it: root-package lines as they are ("Scale",
# "(*Buffer[T]).Len" as Buffer.Len), lines of another package
# ("./vk.DeviceInfo.Vendor") only when their type is re-exported, under its
# name in vkc (DeviceInfo.Vendor).
promised_changes() {
    local reexports=$1 line name pkg rest head tail typ alias
    while IFS= read -r line; do
        name=${line#- }
        name=${name%%: *}
        if [[ $name == ./* ]]; then
            rest=${name#./}
            pkg=${rest%%.*}
            rest=${rest#*.}
        else
            pkg=""
            rest=$name
        fi
        # (*T[P]).M and (T).M name the method T.M.
        rest=$(printf '%s' "$rest" | sed -E 's/^\(\*?([A-Za-z0-9_]+)(\[[^]]*\])?\)/\1/')
        head=${rest%%.*}
        tail=${rest#"$head"}
        if [ -z "$pkg" ]; then
            printf '%s\n' "$rest"
            continue
        fi
        while read -r typ alias; do
            if [ "$typ" = "$pkg.$head" ]; then
                printf '%s%s\n' "$alias" "$tail"
                break
            fi
        done <<<"$reexports"
    done < <(awk '
        /^Incompatible changes:/ { on = 1; next }
        /^[A-Za-z].*:$/ { on = 0 }
        on && /^- / { print }
    ') | sort -u
}

check() {
    local base file report reexports
    base=$(last_release)
    [ -n "$base" ] || die "no release under api/: record one with 'bash scripts/apidiff.sh -release vX.Y.Z'"
    file=$(base_file "$base")
    [ -f "$file" ] || die "$file is missing: rerun 'bash scripts/apidiff.sh -release $base'"
    report=$(run_apidiff -m "$file" "$module" 2> >(grep -v '^Ignoring internal package' >&2)) ||
        die "go tool apidiff failed"
    if [ -z "$report" ]; then
        printf 'apidiff: no change to the API of %s since %s\n' "$module" "$base"
        return 0
    fi
    printf 'apidiff: changes in %s since %s (lines starting ./ are other packages of the module):\n%s\n' "$module" "$base" "$report"
    reexports=$(reexported_types)
    local incompatible=() name
    while IFS= read -r name; do
        [ -n "$name" ] && incompatible+=("$name")
    done < <(promised_changes "$reexports" <<<"$report")
    if [ ${#incompatible[@]} -eq 0 ]; then
        printf 'apidiff: the API of %s is compatible with %s\n' "$module" "$base"
        return 0
    fi
    local newest
    newest=$(changelog_versions | head -n 1)
    if [ -z "$newest" ] || [ "$newest" = "$base" ] || ! allows_break "$base" "$newest"; then
        die "incompatible change to the API of $base (${incompatible[*]}): bump the version in CHANGELOG.md (a new '## vX.Y.Z' heading on top: the minor version while the major is 0, else the major) and list each change under '### Breaking'"
    fi
    local section missing=()
    section=$(breaking_section "$newest")
    [ -n "$(printf '%s' "$section" | tr -d '[:space:]')" ] ||
        die "incompatible change to the API of $base (${incompatible[*]}): CHANGELOG.md's $newest has no entries under '### Breaking'"
    for name in "${incompatible[@]}"; do
        grep -qwF -- "$name" <<<"$section" || missing+=("$name") # whole words: an entry for OpenWith is not one for Open
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
