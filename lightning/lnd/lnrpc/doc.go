// Package lnrpc is the generated Go client of lnd's Lightning gRPC service and
// its messages. `make protos` generates it from lightning.proto of
// github.com/lightningnetwork/lnd/lnrpc at the lnd version go.mod requires
// (v0.21.3-beta when generated), read from the Go module cache, with
// protoc-gen-go at go.mod's google.golang.org/protobuf version and
// protoc-gen-go-grpc at the Makefile's PROTOC_GEN_GO_GRPC. It holds only
// the methods listed in lightning/lnd/lnrpc/methods.txt and the messages
// they reach (internal/prototrim): list a method there to call it.
//
// The proto package, message and service names are lnd's, so the wire
// protocol is lnd's own; only the Go import path is Kassa's, so that the
// service links none of lnd's packages. Do not edit the .pb.go files:
// regenerate them.
package lnrpc
