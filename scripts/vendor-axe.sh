#!/usr/bin/env bash
# Vendors axe-core's single browser file, axe.min.js, and its licence into
# cmd/kassa/testdata/axe/ from the npm registry (npm pack: the published
# tarball, no install, no dependencies). Only the browser tests use it: they
# inject it into the checkout pages and fail on serious or critical
# accessibility violations. The files are committed; run this again only
# to move to another pinned version.
set -euo pipefail

version=4.10.3
dir="$(cd "$(dirname "$0")/.." && pwd)/cmd/kassa/testdata/axe"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "axe-core@$version" >/dev/null)
tar -xzf "$tmp/axe-core-$version.tgz" -C "$tmp"
mkdir -p "$dir"
cp "$tmp/package/axe.min.js" "$dir/axe.min.js"
cp "$tmp/package/LICENSE" "$dir/LICENSE"
echo "$version" >"$dir/VERSION"
echo "vendor-axe: axe-core $version in $dir"
