package lnd

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
)

// subscribeSettles opens lnd's invoice stream after settleIndex and
// returns a receive function that gives the settles only. lnd sends an
// update for every invoice it adds too (one per Kassa create, with its
// payment request, route hints and feature map); the watcher drops all
// but settles, so the stream's codec reads the state and settle index
// from the wire and decodes an update into an lnrpc.Invoice only when
// it is a settle. A settle is decoded in full, as before.
func (g *grpcRPC) subscribeSettles(ctx context.Context, settleIndex uint64) (func() (*lnrpc.Invoice, error), error) {
	stream, err := g.conn.NewStream(ctx, &lnrpc.Lightning_ServiceDesc.Streams[0], lnrpc.Lightning_SubscribeInvoices_FullMethodName,
		grpc.StaticMethod(), grpc.ForceCodec(settleCodec{}))
	if err != nil {
		return nil, err
	}
	if err := stream.SendMsg(&lnrpc.InvoiceSubscription{SettleIndex: settleIndex}); err != nil {
		return nil, err
	}
	if err := stream.CloseSend(); err != nil {
		return nil, err
	}
	return func() (*lnrpc.Invoice, error) {
		for {
			var u streamedInvoice
			if err := stream.RecvMsg(&u); err != nil {
				return nil, err
			}
			if u.settle != nil {
				return u.settle, nil
			}
		}
	}, nil
}

// streamedInvoice is one update of the invoice stream: settle is the
// decoded invoice when the update is a settle, nil otherwise.
type streamedInvoice struct{ settle *lnrpc.Invoice }

// settleCodec is the protobuf codec of the invoice stream: it marshals
// the subscription as proto does, and unmarshals an update into a
// streamedInvoice, decoding only settles.
type settleCodec struct{}

func (settleCodec) Name() string { return "proto" }

func (settleCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("lnd invoice stream: cannot marshal %T", v)
	}
	return proto.Marshal(m)
}

func (settleCodec) Unmarshal(data []byte, v any) error {
	u, ok := v.(*streamedInvoice)
	if !ok {
		return fmt.Errorf("lnd invoice stream: cannot unmarshal into %T", v)
	}
	settled, err := isSettle(data)
	if err != nil || !settled {
		return err
	}
	u.settle = &lnrpc.Invoice{}
	return proto.Unmarshal(data, u.settle)
}

// Field numbers of lnrpc.Invoice that isSettle reads.
const (
	invoiceSettleIndexField protowire.Number = 17
	invoiceStateField       protowire.Number = 21
)

// isSettle reports whether data, an encoded lnrpc.Invoice, is settled
// with a settle index: what the watcher delivers (see watch). It reads
// the top-level fields as protobuf does, the last value of a field
// winning, and fails on malformed input as proto.Unmarshal would.
func isSettle(data []byte) (bool, error) {
	var state, settleIndex uint64
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return false, fmt.Errorf("lnd invoice stream: %w", protowire.ParseError(n))
		}
		data = data[n:]
		if typ == protowire.VarintType && (num == invoiceStateField || num == invoiceSettleIndexField) {
			v, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return false, fmt.Errorf("lnd invoice stream: %w", protowire.ParseError(n))
			}
			data = data[n:]
			if num == invoiceStateField {
				state = v
			} else {
				settleIndex = v
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, data)
		if n < 0 {
			return false, fmt.Errorf("lnd invoice stream: %w", protowire.ParseError(n))
		}
		data = data[n:]
	}
	return int32(state) == int32(lnrpc.Invoice_SETTLED) && settleIndex != 0, nil
}
