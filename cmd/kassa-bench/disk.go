package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/kassapay/kassa/persistence"
)

// benchDisk creates n invoices on the real `kassa serve` over Pebble,
// each with an order id and a buyer e-mail of its own (so that the
// search indexes hold one entry each, as a shop's do), stops it, compacts its data directory and reports the disk it takes
// per invoice (tables after a full compaction, so Pebble's compression
// counts and nothing waits in a write-ahead log).
func benchDisk(ctx context.Context, n, workers int) error {
	tmp, bin, cleanup, err := workspace("disk")
	if err != nil {
		return err
	}
	defer cleanup()
	data := filepath.Join(tmp, "kassa-data")
	k, err := startKassa(bin, data)
	if err != nil {
		return err
	}
	if _, _, err := k.createStore(); err != nil {
		k.stop()
		return err
	}
	var made atomic.Int64
	k.body = func() []byte {
		i := int(made.Add(1))
		return fmt.Appendf(nil, `{"amount":"12.50","currency":"EUR","orderId":%q,"buyerEmail":%q,"metadata":{"sku":"A1"}}`,
			benchOrderID(i), benchEmail(i))
	}
	start := time.Now()
	err = k.createMany(n, workers, nil)
	k.stop()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "disk: %d invoices in %v\n", n, time.Since(start).Round(time.Millisecond))
	dir := filepath.Join(data, "pebble")
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return err
	}
	err = db.CompactAll(ctx)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	used, err := dirSize(dir)
	if err != nil {
		return err
	}
	bench("disk_per_invoice_bytes", float64(used)/float64(n), "B")
	return nil
}

// dirSize is the sum of the sizes of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		info, err := e.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}
