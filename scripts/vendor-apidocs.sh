#!/usr/bin/env bash
# Vendors the renderer of the API reference page (/docs/api): Redoc's
# standalone bundle, from the npm registry at a pinned version whose
# tarball must match the pinned integrity. The files land in
# http/apidocs/redoc/ and are committed, so that building and serving need
# no network: the page loads nothing from other origins. Run it only to
# change the version (then update REDOC_VERSION and REDOC_INTEGRITY).
# Apart from the one substitution below, the bundle is as published.
set -euo pipefail
cd "$(dirname "$0")/.."

REDOC_VERSION=2.5.4
REDOC_INTEGRITY='sha512-M6jWhG1qoBnH6TFmzJnstyCZ87HmOY/UzDm78mHiYihEdlV/YcS9ogOo1NlElnJMeLsyxHFe2yFc4sNjHTrABQ=='
dest=http/apidocs/redoc

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "redoc@$REDOC_VERSION" >/dev/null)
tarball="$tmp/redoc-$REDOC_VERSION.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$got" != "$REDOC_INTEGRITY" ]; then
	echo "redoc@$REDOC_VERSION: integrity $got, want $REDOC_INTEGRITY" >&2
	exit 1
fi
tar -xzf "$tarball" -C "$tmp" package/LICENSE package/bundles/redoc.standalone.js package/bundles/redoc.standalone.js.LICENSE.txt
mkdir -p "$dest"
# The one image Redoc loads from elsewhere is its "powered by" logo on
# Redocly's CDN, which the page's CSP would block (and which hides itself
# when it fails to load): point it at an empty data: URI, so that the page
# does not even try another origin.
logo='src:"https://cdn.redoc.ly/redoc/logo-mini.svg"'
if [ "$(grep -o -F "$logo" "$tmp/package/bundles/redoc.standalone.js" | wc -l)" != 1 ]; then
	echo "redoc@$REDOC_VERSION: the logo reference to replace is not there once; check the bundle" >&2
	exit 1
fi
sed 's|src:"https://cdn.redoc.ly/redoc/logo-mini.svg"|src:"data:,"|' "$tmp/package/bundles/redoc.standalone.js" >"$dest/redoc.standalone.js"
cp "$tmp/package/LICENSE" "$dest/LICENSE"
cp "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" "$dest/THIRD-PARTY-LICENSES.txt"
echo "$REDOC_VERSION" >"$dest/VERSION"
echo "vendored redoc $REDOC_VERSION into $dest"
