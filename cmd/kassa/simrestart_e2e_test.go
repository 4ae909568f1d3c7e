package main

import "testing"

// TestSimulationSurvivesRestart checks that the simulated backends keep
// their state in the data directory: an invoice created before a restart
// is paid by Lightning after it, and an on-chain payment made before the
// restart goes on confirming after it.
func TestSimulationSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "--dev")
	creds := s.createStore("--name", "Restart", "--currency", "EUR")
	path := "/api/v1/stores/" + creds.StoreID + "/invoices"
	ln := s.json("POST", path, creds.APIKey, map[string]any{"amount": "5", "currency": "EUR"}, 200)
	chain := s.json("POST", path, creds.APIKey, map[string]any{"amount": "5", "currency": "EUR"}, 200)
	s.mustCLI("sim", "pay", chain["id"].(string), "--method", "onchain")
	s.Stop()

	s = startServer(t, dir, "--dev")
	s.mustCLI("sim", "pay", ln["id"].(string), "--method", "lightning")
	if got := s.json("GET", path+"/"+ln["id"].(string), creds.APIKey, nil, 200); got["status"] != "Settled" {
		t.Errorf("invoice paid by Lightning after the restart is %v, want Settled", got["status"])
	}
	s.mustCLI("sim", "mine", "1")
	if got := s.json("GET", path+"/"+chain["id"].(string), creds.APIKey, nil, 200); got["status"] != "Settled" {
		t.Errorf("invoice paid on chain before the restart and mined after it is %v, want Settled", got["status"])
	}
}
