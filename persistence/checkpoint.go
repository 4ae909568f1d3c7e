package persistence

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Checkpoint writes a consistent copy of the store into dir, which must
// not exist yet, while the store goes on serving: every batch committed
// before the call is in the copy, and no batch is in it in part. Pebble
// hard-links the immutable table files when dir is on the same file
// system, so the copy costs little space until compactions replace them;
// the write-ahead log is flushed first and copied. Files get the store's
// private modes. Open(dir) opens the copy as a store of its own.
func (d *DB) Checkpoint(dir string) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if err := guarded(func() error { return d.db.Checkpoint(dir, pebble.WithFlushedWAL()) }); err != nil {
		return fmt.Errorf("checkpoint into %s: %w", dir, err)
	}
	return nil
}
