package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runBinary runs the kassa binary with args and returns stdout, stderr
// and the exit code.
func runBinary(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	needBinary(t)
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &exit):
		return out.String(), errb.String(), exit.ExitCode()
	}
	t.Fatalf("kassa %s: %v", strings.Join(args, " "), err)
	return "", "", 0
}

// TestCLIHelp asks every command group and command for help: it goes to
// stdout with exit 0 and names the commands or flags; a missing or
// unknown command goes to stderr with exit 2.
func TestCLIHelp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"kassa serve", "kassa store list", "kassa sim mine"}},
		{[]string{"help"}, []string{"kassa store create"}},
		{[]string{"store", "--help"}, []string{"kassa store create", "kassa store list", "kassa store topup"}},
		{[]string{"store", "-h"}, []string{"kassa store list"}},
		{[]string{"store", "help"}, []string{"kassa store list"}},
		{[]string{"help", "store"}, []string{"kassa store list"}},
		{[]string{"sim", "--help"}, []string{"kassa sim pay", "kassa sim mine"}},
		{[]string{"store", "create", "--help"}, []string{"-name", "-currency", "-server", "-data"}},
		{[]string{"store", "list", "--help"}, []string{"-server"}},
		{[]string{"sim", "pay", "INV", "--help"}, []string{"-method", "-amount"}},
		{[]string{"serve", "--help"}, []string{"-data", "-listen", "-memory-limit"}},
	} {
		stdout, stderr, code := runBinary(t, tt.args...)
		if code != 0 {
			t.Errorf("kassa %s exited %d: %s", strings.Join(tt.args, " "), code, stderr)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("kassa %s printed no %q:\n%s", strings.Join(tt.args, " "), w, stdout)
			}
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "usage:"},
		{[]string{"store"}, "kassa store list"},
		{[]string{"sim"}, "kassa sim pay"},
		{[]string{"store", "remove"}, `unknown command "store remove"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"store", "create", "--nope"}, "flag provided but not defined"},
		{[]string{"serve", "--nope"}, "flag provided but not defined"},
	} {
		stdout, stderr, code := runBinary(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) || stdout != "" {
			t.Errorf("kassa %s = exit %d, stdout %q, stderr %q; want exit 2 and %q on stderr", strings.Join(tt.args, " "), code, stdout, stderr, tt.want)
		}
	}
}

// TestDemoStoreSurvivesRestart restarts `serve --dev` with other stores
// beside the demo store, one of them sorting before it: the restart must
// name the same demo store. It also lists the stores and checks the line
// logged on shutdown.
func TestDemoStoreSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, dir, "--dev")
	_, demo := demoExports(t, s)
	// Store ids are random: create stores until one sorts before the demo
	// store, so that "the first store found" is not the demo store.
	created := map[string]bool{demo: true}
	for len(created) < 31 {
		c := s.createStore("--name", "Other")
		created[c.StoreID] = true
		if c.StoreID < demo {
			break
		}
	}

	out := s.mustCLI("store", "list")
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var st struct {
			StoreID  string `json:"storeId"`
			Name     string `json:"name"`
			Currency string `json:"currency"`
			Balance  *int64 `json:"balance"`
			APIKey   string `json:"apiKey"`
		}
		if err := json.Unmarshal([]byte(line), &st); err != nil || st.StoreID == "" || st.Currency == "" || st.Balance == nil {
			t.Fatalf("store list line %q: %v", line, err)
		}
		if st.APIKey != "" {
			t.Errorf("store list shows an API key: %s", line)
		}
		if st.StoreID == demo && (st.Name != "Demo Store" || *st.Balance != 1_000_000) {
			t.Errorf("demo store listed as %s", line)
		}
		listed[st.StoreID] = true
	}
	if len(listed) != len(created) {
		t.Errorf("store list has %d stores, want %d:\n%s", len(listed), len(created), out)
	}
	for id := range created {
		if !listed[id] {
			t.Errorf("store %s is not listed", id)
		}
	}

	s.Stop()
	if !strings.Contains(s.Logs(), `msg="kassa stopped"`) {
		t.Errorf("no shutdown line in the log:\n%s", s.Logs())
	}
	s = startServer(t, dir, "--dev")
	if _, again := demoExports(t, s); again != demo {
		t.Errorf("after a restart the demo store is %s, want %s", again, demo)
	}
	// The restart seeded no second demo store.
	if out := s.mustCLI("store", "list"); strings.Count(out, "\n") != len(created) {
		t.Errorf("after a restart the store list is:\n%s", out)
	}
}

// TestStoreTopUpReference: `kassa store topup --reference` run twice (an
// operator's retry) credits the balance once.
func TestStoreTopUpReference(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	c := s.createStore("--name", "Shop")
	var first string
	for i := range 2 {
		out := s.mustCLI("store", "topup", c.StoreID, "--amount", "40000", "--reference", "billing-2026-11")
		var got struct {
			Transaction int64 `json:"transactionId"`
			Balance     int64 `json:"balance"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Balance != 40000 {
			t.Fatalf("top-up %d printed %q: %v", i+1, out, err)
		}
		if i == 0 {
			first = out
		} else if out != first {
			t.Errorf("the retry printed %q, the first %q", out, first)
		}
	}
	if _, err := s.cli("store", "topup", c.StoreID, "--amount", "1", "--reference", "billing-2026-11"); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("the reference with another amount: %v", err)
	}
}

// TestStoreWritesAfterRestart: a pay link saved (a store event that does
// not rewrite the store's snapshot), a restart, then a top-up: the store
// actor must write after the journal's last event. On PostgreSQL
// (KASSA_E2E_STORE=postgres) the top-up was refused for good before.
func TestStoreWritesAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, dir)
	c := s.createStore("--name", "Shop")
	s.json("POST", "/api/v1/stores/"+c.StoreID+"/payment-requests", c.APIKey, map[string]any{"amount": 7, "title": "Tea"}, 200)
	s.Stop()
	s = startServer(t, dir)
	if _, err := s.cli("store", "topup", c.StoreID, "--amount", "1000"); err != nil {
		t.Fatalf("top-up after a restart: %v", err)
	}
	s.json("POST", "/api/v1/stores/"+c.StoreID+"/payment-requests", c.APIKey, map[string]any{"amount": 8, "title": "Coffee"}, 200)
	if got := len(s.list("/api/v1/stores/"+c.StoreID+"/payment-requests", c.APIKey)); got != 2 {
		t.Errorf("%d pay links, want 2", got)
	}
}
