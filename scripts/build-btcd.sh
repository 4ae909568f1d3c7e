#!/usr/bin/env bash
# Builds btcd and btcctl at a pinned version with `go install` into a
# cache keyed by that version, and prints the directory that holds them.
# Idempotent: a cache that already holds both binaries is used as it is.
# Fails loudly (non-zero exit, message on stderr) when the build fails:
# the integration tests need real daemons and never skip silently.
set -euo pipefail

VERSION="${BTCD_VERSION:-v0.26.2}"
CACHE="${KASSA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kassa}"
DIR="$CACHE/bin/btcd-$VERSION"

if [[ -x "$DIR/btcd" && -x "$DIR/btcctl" ]]; then
	echo "$DIR"
	exit 0
fi

mkdir -p "$DIR"
TMP="$(mktemp -d "$CACHE/bin/.btcd-build.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

echo "building btcd and btcctl $VERSION into $DIR" >&2
# GOFLAGS from the caller (e.g. -mod=vendor) must not leak into a build of
# another module.
if ! GOFLAGS= GOBIN="$TMP" go install \
	"github.com/btcsuite/btcd@$VERSION" \
	"github.com/btcsuite/btcd/cmd/btcctl@$VERSION" >&2; then
	echo "error: building btcd $VERSION failed; the integration tests need it" >&2
	exit 1
fi
for b in btcd btcctl; do
	if [[ ! -x "$TMP/$b" ]]; then
		echo "error: go install produced no $b binary" >&2
		exit 1
	fi
done
# Move both into place only when both built, so a half-built cache never
# passes the check above.
mv "$TMP/btcctl" "$DIR/btcctl"
mv "$TMP/btcd" "$DIR/btcd"
echo "$DIR"
