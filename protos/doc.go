// Package protos holds the protobuf messages of Kassa's actors: the events
// they journal and the commands that cross actor boundaries, so that both
// can later cross the network of a cluster. Generate with `make protos`.
package protos

//go:generate protoc --go_out=. --go_opt=paths=source_relative kassa.proto
