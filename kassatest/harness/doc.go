// Package harness starts, for Kassa's tests and benchmarks, the processes
// that run outside the test: the kassa binary (built once per process),
// btcd and lnd (built and cached by scripts/build-btcd.sh and
// scripts/build-lnd.sh), a throw-away PostgreSQL server and a throw-away
// etcd, each on free loopback ports and stopped when the test ends. It
// also holds what the integration tests do with them: mine, connect and
// disconnect btcd nodes, a small wallet that owns the coinbase key and
// pays with real signed segwit transactions, open lnd channels, the
// flags of a test cluster's nodes.
//
// In-process helpers (the contract suites, the test clock, WaitFor) live
// in package kassatest; this package is for what needs a process. Every
// wait polls with a deadline; nothing sleeps a fixed time. Nothing is
// skipped because a daemon is missing: a failure to build or start one
// fails the test. Under -short (the fast tier) the tests that need a
// process are skipped (SkipShort).
package harness
