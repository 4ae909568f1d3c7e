// Package kassatest holds what every implementation of a port of the
// core (package kassa) is tested with: one contract suite per port, and a
// Clock that moves only when told to.
//
// Each suite is an exported function that an implementation's own test
// calls with a constructor, so that Pebble on memory and on disk, the
// simulated backends and the real ones (and a later SQL store) are held
// to the same cases:
//
//	RunJournal, RunReader, RunKeyValue   persistence
//	RunForwardStore, RunSimStore         persistence: forwards, simulators
//	RunChain, RunLightning               chain and Lightning backends
//	RunWebhookClient                     the webhook egress client
//
// The suites use only the port's interface, never an implementation's
// internals, and each case gets a fresh instance.
//
// Everything here runs in the test's process; what starts another
// process (the kassa binary, btcd, lnd, PostgreSQL, etcd) is in
// kassatest/harness.
package kassatest
