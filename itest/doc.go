// Package itest holds Kassa's integration tests against real daemons
// (btcd in regtest), started by package kassatest/harness on loopback. They run with
// `make itest`; a daemon that cannot be built fails them, never skips them.
package itest
