package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulationOnlyWhenAsked is issue 18's finding 5: `kassa serve`
// without --dev and without --chain/--lightning served the simulated
// backends, and POST /checkout/{id}/sim/pay settled any invoice for
// anyone. Now such a server refuses to start, naming the flags; with
// --chain sim --lightning sim given on purpose it simulates but has no
// simulation routes (the banner stays); with --dev the routes pay.
func TestSimulationOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	_, stderr, code := runBinary(t, "serve", "--data", data, "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(stderr, "--chain and --lightning not set") || !strings.Contains(stderr, "--chain sim --lightning sim") {
		t.Errorf("serve without backends or --dev exited %d: %s", code, stderr)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the refused serve created its data directory (%v)", err)
	}
	_, stderr, code = runBinary(t, "serve", "--data", data, "--listen", "127.0.0.1:0", "--chain", "sim")
	if code != 1 || !strings.Contains(stderr, "--lightning not set") {
		t.Errorf("serve with only --chain sim exited %d: %s", code, stderr)
	}

	// The harness names both simulators.
	s := startServer(t, t.TempDir())
	st := s.createStore("--name", "Sim Shop", "--currency", "SATS")
	inv := s.json("POST", "/api/v1/stores/"+st.StoreID+"/invoices", st.APIKey, map[string]any{"amount": 1000, "currency": "SATS"}, 200)
	id := inv["id"].(string)
	if status, body, _ := s.do("POST", "/checkout/"+id+"/sim/pay?method=lightning", "", nil); status != 404 {
		t.Errorf("checkout sim/pay without --dev answered %d: %s", status, body)
	}
	if status, body, _ := s.do("POST", "/checkout/"+id+"/sim/mine", "", nil); status != 404 {
		t.Errorf("checkout sim/mine without --dev answered %d: %s", status, body)
	}
	if out, err := s.cli("sim", "pay", id); err == nil || !strings.Contains(err.Error(), "--dev") {
		t.Errorf("kassa sim pay without --dev: %q, %v", out, err)
	}
	if got := s.json("GET", "/api/v1/stores/"+st.StoreID+"/invoices/"+id, st.APIKey, nil, 200)["status"]; got != "New" {
		t.Errorf("the invoice is %v, want New: nothing paid it", got)
	}
	status, page, _ := s.do("GET", "/checkout/"+id, "", nil)
	if status != 200 || !strings.Contains(string(page), `class="sim"`) || strings.Contains(string(page), `id="sim-ln"`) {
		t.Errorf("checkout page without --dev (%d): want the SIMULATION banner and no pay buttons", status)
	}
	if sim := s.json("GET", "/api/v1/health", "", nil, 200)["simulation"]; sim != true {
		t.Errorf("health says simulation %v", sim)
	}

	// Positive control: with --dev the same route pays.
	dev := startServer(t, t.TempDir(), "--dev")
	st = dev.createStore("--name", "Dev Shop", "--currency", "SATS")
	id = dev.json("POST", "/api/v1/stores/"+st.StoreID+"/invoices", st.APIKey, map[string]any{"amount": 1000, "currency": "SATS"}, 200)["id"].(string)
	if status, body, _ := dev.do("POST", "/checkout/"+id+"/sim/pay?method=lightning", "", nil); status != 200 {
		t.Errorf("checkout sim/pay with --dev answered %d: %s", status, body)
	}
}
