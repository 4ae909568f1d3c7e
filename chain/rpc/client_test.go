package rpc

import (
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/btcsuite/btcd/chaincfg"
)

// TestClientKeepsItsConnection polls a TLS node five times: the calls
// share one connection (one TLS handshake), where rpcclient's HTTP POST
// mode opened a new one per call. Answers and errors decode as before.
func TestClientKeepsItsConnection(t *testing.T) {
	const best = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"
	var conns atomic.Int64
	var calls atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "pass" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var req struct {
			Method string `json:"method"`
			ID     any    `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decode request: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "getbestblockhash":
			json.NewEncoder(w).Encode(map[string]any{"result": best, "error": nil, "id": req.ID})
		case "gettxout":
			json.NewEncoder(w).Encode(map[string]any{"result": nil, "error": nil, "id": req.ID})
		default:
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"result": nil, "error": map[string]any{"code": -32601, "message": "Method not found"}, "id": req.ID})
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	conn := tlsNodeConn(t, srv)
	c, err := conn.Client()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		h, err := c.GetBestBlockHash()
		if err != nil || h.String() != best {
			t.Fatalf("GetBestBlockHash = %v, %v", h, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 calls opened %d connections, want 1", n)
	}
	// A null result (spent output) is nil; a method the node lacks is an
	// RPC error, which tells bitcoind from btcd.
	if out, err := c.GetTxOut(chaincfg.RegressionNetParams.GenesisHash, 0, true); out != nil || err != nil {
		t.Errorf("GetTxOut of a spent output = %v, %v; want nil, nil", out, err)
	}
	if kind, err := c.kind(); kind != "bitcoind" || err != nil {
		t.Errorf("kind of a node without getinfo = %q, %v", kind, err)
	}
	// A wrong password is an error naming the HTTP status, at once.
	bad := conn
	bad.Pass = "wrong"
	bc, err := bad.Client()
	if err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	if _, err := bc.GetBestBlockHash(); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong password: %v, want 401", err)
	}
	if n := calls.Load() - before; n != 1 {
		t.Errorf("a refused call was made %d times, want once", n)
	}
}

// TestClientResumesTLSSessions: btcd answers each call with
// "Connection: close", so every call is a new TLS connection. The
// client resumes the session of the one before: only the first call
// pays for a full handshake (btcd's P-521 certificate signed by the
// node and verified here), and the calls still answer.
func TestClientResumesTLSSessions(t *testing.T) {
	const best = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"
	var full, resumed atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS.DidResume {
			resumed.Add(1)
		} else {
			full.Add(1)
		}
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"result": best, "error": nil, "id": 1})
	}))
	srv.StartTLS()
	defer srv.Close()
	c, err := tlsNodeConn(t, srv).Client()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if h, err := c.GetBestBlockHash(); err != nil || h.String() != best {
			t.Fatalf("GetBestBlockHash = %v, %v", h, err)
		}
	}
	if f, r := full.Load(), resumed.Load(); f != 1 || r != 4 {
		t.Errorf("5 calls on closed connections: %d full handshakes and %d resumed, want 1 and 4", f, r)
	}
}

// tlsNodeConn is the connection to srv, a TLS test node: its certificate
// written to a file, user "user" and password "pass".
func tlsNodeConn(t *testing.T, srv *httptest.Server) Conn {
	t.Helper()
	cert := filepath.Join(t.TempDir(), "rpc.cert")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return Conn{Host: strings.TrimPrefix(srv.URL, "https://"), User: "user", Pass: "pass", Cert: cert, Params: &chaincfg.RegressionNetParams}
}
