// Package legacycall holds the cluster call as it travelled before the
// typed calls of protos/storecall.proto (a method name and JSON
// arguments inside protobuf), for the benchmark that compares the two.
// No node sends it.
package legacycall
