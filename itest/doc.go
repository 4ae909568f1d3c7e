// Package itest holds Kassa's integration tests against real daemons
// (btcd in regtest), started by package kassatest/harness on loopback. They
// carry the build tag itest and run with `make itest` (go test -tags itest);
// a daemon that cannot be built fails them, never skips them. Without the
// tag the package holds one test that skips and says so.
package itest
