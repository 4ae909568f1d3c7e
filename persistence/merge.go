package persistence

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// mergerName is stored on disk by Pebble; it must never change.
const mergerName = "kassa.int64add.v1"

// merger adds int64 operands (8 bytes, big-endian, two's complement). It
// keeps prepaid balances exact under concurrent batches from many invoice
// actors without a read-modify-write.
var merger = &pebble.Merger{
	Name: mergerName,
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		m := &int64Merger{}
		return m, m.MergeNewer(value)
	},
}

type int64Merger struct{ sum int64 }

func (m *int64Merger) MergeNewer(value []byte) error {
	if len(value) != 8 {
		return fmt.Errorf("int64 merge operand has %d bytes", len(value))
	}
	m.sum += int64(binary.BigEndian.Uint64(value))
	return nil
}

func (m *int64Merger) MergeOlder(value []byte) error { return m.MergeNewer(value) }

func (m *int64Merger) Finish(bool) ([]byte, io.Closer, error) {
	return encodeInt64(m.sum), nil, nil
}

func encodeInt64(v int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	return b[:]
}
