#!/usr/bin/env bash
# Installs what the tests need beyond Go: Debian's Chromium at
# /usr/bin/chromium, which the browser tests in cmd/kassa drive headless
# through chromedp. Idempotent: it does nothing when Chromium is there.
# `make test-deps` runs it, and `make test` runs that first.
set -euo pipefail

chromium=/usr/bin/chromium

if [[ -x "$chromium" ]]; then
	exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
	echo "install-test-deps: $chromium is missing and installing it needs root." >&2
	echo "install-test-deps: run as root, or: sudo apt-get install -y chromium" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium

if [[ ! -x "$chromium" ]]; then
	echo "install-test-deps: apt-get installed chromium but $chromium is still missing" >&2
	exit 1
fi
echo "install-test-deps: installed $("$chromium" --version 2>/dev/null || echo chromium)"
