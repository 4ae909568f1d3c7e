package http

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// stallingBackend answers its first reading at once; later readings
// stall (as lnd's GetInfo did for 36 s with lnd down) until released or
// for at most ten seconds, and then report lnd unreachable.
type stallingBackend struct {
	calls   atomic.Int32
	release chan struct{}
}

func (b *stallingBackend) Info(ctx context.Context) kassa.BackendInfo {
	if b.calls.Add(1) == 1 {
		return kassa.BackendInfo{Backend: "lnd", Network: "mainnet", Synced: true}
	}
	select {
	case <-b.release:
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
	}
	return kassa.BackendInfo{Backend: "lnd", Error: "dial tcp 10.9.9.9:10009: i/o timeout"}
}

// TestHealthPublicAndCached is issue 18's health finding: the public
// health showed internal addresses and raw dial errors, and called lnd's
// GetInfo on every request (36 s once with lnd down). Now the public
// answer says ok or degraded per component without them (the admin
// token gets them), the backends are read at most once per time to
// live in the background, no request waits for a stalled backend, and
// the last known network stays while lnd is unreachable.
func TestHealthPublicAndCached(t *testing.T) {
	t.Parallel()
	ln := &stallingBackend{release: make(chan struct{})}
	e := newEnv(t, withDeps(func(d *Deps) {
		d.HealthTTL = 50 * time.Millisecond
		d.Chain = stubBackend{kassa.BackendInfo{Backend: "rpc", Network: "mainnet", Node: "bitcoind", BestHash: "00ab",
			Error: "dial tcp 10.1.2.3:8332: connect: connection refused", Warning: "reorg at 10.1.2.3"}}
		d.Lightning = ln
		d.Storage = failedStorage{kassa.Errorf(kassa.Unavailable, "write /var/lib/kassa/000123.log: no space left on device")}
	}))
	type health struct {
		Status           string
		Chain, Lightning struct{ Status, Network, Error, Warning, Node, BestHash string }
		Storage          struct{ Status, Error string }
	}
	read := func(headers ...header) (health, string, time.Duration) {
		t.Helper()
		start := time.Now()
		w := e.do("GET", "/api/v1/health", "", append([]header{noKey}, headers...)...)
		took := time.Since(start)
		var h health
		if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil {
			t.Fatalf("health %d %s: %v", w.Code, w.Body, err)
		}
		return h, w.Body.String(), took
	}

	h, body, _ := read()
	for _, secret := range []string{"10.1.2.3", "dial", "refused", "bitcoind", "00ab", "/var/lib", "no space"} {
		if strings.Contains(body, secret) {
			t.Errorf("the public health shows %q: %s", secret, body)
		}
	}
	if h.Chain.Status != "degraded" || h.Lightning.Status != "ok" || h.Storage.Status != "failed" || h.Status != "degraded" {
		t.Errorf("public health %s", body)
	}
	h, body, _ = read(admin)
	if !strings.Contains(h.Chain.Error, "10.1.2.3:8332") || h.Chain.Node != "bitcoind" || !strings.Contains(h.Storage.Error, "no space") {
		t.Errorf("the admin token's health lacks the details: %s", body)
	}

	// lnd stalls: no request waits for it, and it is asked once at a time.
	time.Sleep(60 * time.Millisecond) // past the time to live
	slowest := time.Duration(0)
	for range 20 {
		_, _, took := read()
		slowest = max(slowest, took)
	}
	if slowest > 2*time.Second {
		t.Errorf("a health request took %v while lnd stalled", slowest)
	}
	if n := ln.calls.Load(); n > 2 {
		t.Errorf("lnd was asked %d times by 22 health requests", n)
	}
	close(ln.release)
	e.eventually("health to report lnd unreachable", func() bool {
		h, _, _ := read(admin)
		return h.Lightning.Status == "degraded"
	})
	h, body, _ = read(admin)
	if h.Lightning.Network != "mainnet" || !strings.Contains(h.Lightning.Error, "i/o timeout") {
		t.Errorf("lnd unreachable: want the last known network and the error: %s", body)
	}
	t.Logf("slowest of 20 health requests while lnd stalled: %v; lnd asked %d times", slowest, ln.calls.Load())
	if w := e.do("GET", "/api/v1/health", "", noKey, header{"Authorization", "Bearer wrong"}); strings.Contains(w.Body.String(), "10.1.2.3") {
		t.Errorf("a wrong token gets the details")
	}
}

// The chain's addressPool (how many addresses of lnd's wallet are left
// for stores without an xpub during an lnd outage) is in the admin
// token's health, as the OpenAPI document describes it, and not in the
// public one.
func TestHealthAddressPoolForAdmin(t *testing.T) {
	t.Parallel()
	left := 3
	e := newEnv(t, withDeps(func(d *Deps) {
		d.Chain = stubBackend{kassa.BackendInfo{Backend: "rpc", Network: "regtest", Synced: true, AddressPool: &left}}
	}))
	type health struct {
		Chain struct {
			AddressPool *int `json:"addressPool"`
		} `json:"chain"`
	}
	read := func(headers ...header) (health, string) {
		t.Helper()
		w := e.do("GET", "/api/v1/health", "", append([]header{noKey}, headers...)...)
		var h health
		if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil {
			t.Fatalf("health %d %s: %v", w.Code, w.Body, err)
		}
		return h, w.Body.String()
	}
	if h, body := read(admin); h.Chain.AddressPool == nil || *h.Chain.AddressPool != 3 {
		t.Fatalf("admin health without addressPool 3: %s", body)
	}
	if _, body := read(); strings.Contains(body, "addressPool") {
		t.Fatalf("public health shows the address pool: %s", body)
	}
}

// TestHealthJournalFaults: a journal that does not replay makes health
// degraded (still 200: the rest of the node serves), counted for
// everyone and named for the admin token only.
func TestHealthJournalFaults(t *testing.T) {
	t.Parallel()
	var faults []string
	e := newEnv(t, withDeps(func(d *Deps) {
		d.JournalFaults = func() []string { return faults }
	}))
	type health struct {
		Status  string
		Journal *struct {
			Status string
			Faults int
			Errors []string
		}
	}
	read := func(headers ...header) (health, string) {
		t.Helper()
		w := e.do("GET", "/api/v1/health", "", append([]header{noKey}, headers...)...)
		var h health
		if w.Code != 200 {
			t.Fatalf("health %d: %s", w.Code, w.Body)
		}
		if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil {
			t.Fatalf("health %s: %v", w.Body, err)
		}
		return h, w.Body.String()
	}
	if h, body := read(); h.Status != "ok" || h.Journal != nil {
		t.Fatalf("health without faults: %s", body)
	}
	faults = []string{"invoice inv1: journal event 2 (ExpiryReached) does not apply: conflict"}
	if h, body := read(); h.Status != "degraded" || h.Journal == nil || h.Journal.Faults != 1 || strings.Contains(body, "inv1") {
		t.Fatalf("public health with a fault: %s", body)
	}
	if h, body := read(admin); h.Journal == nil || len(h.Journal.Errors) != 1 || h.Journal.Errors[0] != faults[0] {
		t.Fatalf("admin health with a fault: %s", body)
	}
}
