package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"
)

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestDevAnswersOnlyOnceSeeded: with --dev, kassa serve writes the demo
// store before it answers any request, so a health check that gets 200
// finds the node started. Before, the HTTP server answered while the
// demo store was still being written, and a storage outage in that
// window made kassa serve exit after its health said ok (it failed
// TestHealthSaysStorageUnavailable in CI). The check runs when the demo
// store's lines are printed, the last step of seeding: the server must
// not answer yet.
func TestDevAnswersOnlyOnceSeeded(t *testing.T) {
	m := NewMain()
	answered := make(chan int, 1)
	m.Stdout = writerFunc(func(p []byte) (int, error) {
		if bytes.Contains(p, []byte("Demo store")) {
			c := &http.Client{Timeout: 300 * time.Millisecond}
			code := 0
			if res, err := c.Get("http://" + m.Addr + "/api/v1/health"); err == nil {
				code = res.StatusCode
				res.Body.Close()
			}
			select {
			case answered <- code:
			default:
			}
		}
		return len(p), nil
	})
	if err := m.ParseFlags([]string{"--dev", "--data", t.TempDir(), "--listen", "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	select {
	case code := <-answered:
		if code != 0 {
			t.Errorf("health answered %d while the demo store was being written", code)
		}
	default:
		t.Fatal("the demo store's lines were not printed")
	}
	// Once Run returns, the server answers.
	res, err := http.Get("http://" + m.Addr + "/api/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("health after start: %d", res.StatusCode)
	}
}
