#!/usr/bin/env bash
# Builds lnd and lncli for the Lightning integration tests from the Go
# module cache (the module proxy is the only source reachable here, and
# `go install` refuses lnd because its go.mod has replace directives).
#
# The binaries are cached by version under ${KASSA_BIN_CACHE:-~/.cache/kassa/bin}/lnd-VERSION,
# so only the first run pays the ~4-minute build; later runs print the
# folder and exit. Idempotent and safe to run concurrently (a lock guards
# the build, and the folder appears only once both binaries are built).
# Prints the folder holding lnd and lncli on its last line of stdout.
#
# Usage: scripts/build-lnd.sh [VERSION]   (default v0.21.3-beta)
set -euo pipefail

version="${1:-v0.21.3-beta}"
cache="${KASSA_BIN_CACHE:-${HOME}/.cache/kassa/bin}"
dest="$cache/lnd-$version"

die() {
	echo "build-lnd: $*" >&2
	exit 1
}

have() {
	[[ -x "$dest/lnd" && -x "$dest/lncli" ]]
}

if have; then
	echo "$dest"
	exit 0
fi

command -v go >/dev/null || die "go is not on PATH"
mkdir -p "$cache" || die "cannot create $cache"

# One build at a time: a second caller waits, then finds the binaries.
exec 9>"$cache/.lnd-$version.lock"
if command -v flock >/dev/null; then
	flock 9 || die "cannot lock $cache/.lnd-$version.lock"
fi
if have; then
	echo "$dest"
	exit 0
fi

echo "build-lnd: building lnd $version from the module cache (takes a few minutes the first time)" >&2

# The module's source, from the cache or the proxy.
json="$(GOFLAGS= GOWORK=off go mod download -json "github.com/lightningnetwork/lnd@$version")" ||
	die "go mod download github.com/lightningnetwork/lnd@$version failed"
src="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p' | head -n1)"
[[ -n "$src" && -f "$src/go.mod" ]] || die "no module folder in: $json"

work="$(mktemp -d "$cache/.lnd-build.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# The module cache is read-only; the build needs a writable copy.
cp -R "$src" "$work/src"
chmod -R u+w "$work/src"
mkdir -p "$work/bin"

(
	cd "$work/src"
	GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 go build -trimpath \
		-tags "signrpc walletrpc chainrpc invoicesrpc routerrpc peersrpc" \
		-ldflags "-s -w" \
		-o "$work/bin/" ./cmd/lnd ./cmd/lncli
) >&2 || die "go build of lnd $version failed (see above)"

[[ -x "$work/bin/lnd" && -x "$work/bin/lncli" ]] || die "go build produced no lnd or lncli"
"$work/bin/lnd" --version >&2 || die "the built lnd does not run"

rm -rf "$dest"
mv "$work/bin" "$dest" || die "cannot move the binaries to $dest"
echo "build-lnd: lnd $version built into $dest" >&2
echo "$dest"
