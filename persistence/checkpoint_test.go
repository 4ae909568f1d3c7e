package persistence

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestCheckpoint copies a store under concurrent commits: the copy opens
// as a store of its own and holds every batch committed before the call,
// and the original goes on working.
func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(filepath.Join(dir, "live"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	forever := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100 {
		if err := db.PutValue(ctx, fmt.Sprintf("before/%03d", i), []byte("v"), forever); err != nil {
			t.Fatal(err)
		}
	}
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := db.PutValue(ctx, fmt.Sprintf("during/%06d", i), []byte("v"), forever); err != nil {
				done <- err
				return
			}
		}
	}()
	copyDir := filepath.Join(dir, "copy")
	err = db.Checkpoint(copyDir)
	close(stop)
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(copyDir); err == nil {
		t.Error("a second checkpoint into an existing directory was accepted")
	}
	cp, err := Open(copyDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	for i := range 100 {
		if _, ok, err := cp.GetValue(ctx, fmt.Sprintf("before/%03d", i)); err != nil || !ok {
			t.Fatalf("the copy lacks before/%03d (%v)", i, err)
		}
	}
	if err := db.PutValue(ctx, "after", []byte("v"), forever); err != nil {
		t.Fatalf("the original after the checkpoint: %v", err)
	}
	if _, ok, _ := cp.GetValue(ctx, "after"); ok {
		t.Error("a value written after the checkpoint is in the copy")
	}
}
