package persistence

import (
	"context"
	"fmt"
)

// CompactAll flushes what is in memory and compacts every key, so that
// overwritten and deleted values leave the disk and every value is
// compressed. kassa-bench measures the disk an invoice costs after it
// (and after Close, which removes the files the compaction replaced).
func (d *DB) CompactAll(ctx context.Context) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	err := guarded(func() error {
		if err := d.db.Flush(); err != nil {
			return err
		}
		// Every key starts with a printable prefix ("e/", "inv/", …).
		return d.db.Compact(ctx, []byte{0}, []byte{0xff}, false)
	})
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}
