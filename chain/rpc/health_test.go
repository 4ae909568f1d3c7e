package rpc

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// Health is read on request: Info answers from what the watcher last
// learned and never waits on the node. rpcclient retries a failed call
// ten times over 22.5 s, so an Info that asked an unreachable node for
// its version took that long (twice in one actors test, 45 s).
func TestInfoDoesNotCallTheNode(t *testing.T) {
	conn, err := ParseURL("rpc://u:p@127.0.0.1:1?network=regtest&notls=1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Conn: conn, State: &memKV{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if info := c.Info(context.Background()); info.Node != "" || info.Synced {
			t.Errorf("Info of a node never reached: %+v", info)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // rpcclient's retries take 22.5 s
		t.Fatal("Info waited on the unreachable node")
	}
}
