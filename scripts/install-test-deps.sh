#!/usr/bin/env bash
# Installs what the tests need beyond Go, from Debian: Chromium at
# /usr/bin/chromium, which the browser tests in cmd/kassa drive headless
# through chromedp, and curl and jq, which the README walkthrough uses and
# cmd/kassa/readme_test.go runs, and the PostgreSQL 15 server that
# persistence/postgres's tests start (initdb and pg_ctl under
# /usr/lib/postgresql/15/bin), and etcd (Debian etcd-server, 3.4) that the
# cluster tests start (kassatest/harness), and the Noto fonts that Arabic,
# Persian, Hebrew, Hindi, Thai (fonts-noto-core) and Chinese, Japanese and
# Korean (fonts-noto-cjk) need, without which the checkout in those
# languages draws boxes and TestBrowserCheckoutLanguages fails. Idempotent:
# it does nothing when all are there. `make test-deps` runs it, and `make test` runs that first.
set -euo pipefail

chromium=/usr/bin/chromium
missing=()
[[ -x "$chromium" ]] || missing+=(chromium)
command -v curl >/dev/null || missing+=(curl)
command -v jq >/dev/null || missing+=(jq)
pgbin=/usr/lib/postgresql/15/bin
[[ -x "$pgbin/initdb" && -x "$pgbin/pg_ctl" ]] || missing+=(postgresql)
command -v etcd >/dev/null || missing+=(etcd-server)
fonts=(fonts-noto-core fonts-noto-cjk)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for f in "${fonts[@]}"; do installed "$f" || missing+=("$f"); done

if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
	echo "install-test-deps: missing ${missing[*]}; installing needs root." >&2
	echo "install-test-deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}"

fonts_missing=false
for f in "${fonts[@]}"; do installed "$f" || fonts_missing=true; done
if [[ ! -x "$chromium" ]] || ! command -v curl >/dev/null || ! command -v jq >/dev/null || [[ ! -x "$pgbin/initdb" ]] || ! command -v etcd >/dev/null || $fonts_missing; then
	echo "install-test-deps: apt-get installed ${missing[*]} but one is still missing" >&2
	exit 1
fi
echo "install-test-deps: installed ${missing[*]}"
