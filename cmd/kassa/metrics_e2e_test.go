package main

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var metricsLine = regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)

// scrapeMetrics reads /metrics at addr into "series" → value.
func scrapeMetrics(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	res, err := httpClient.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d: %s", res.StatusCode, data)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsListener starts the binary with --metrics-listen, creates an
// invoice over the API and pays it by Lightning with the simulator, then
// scrapes the admin listener: the series show that run. The public
// listener does not serve /metrics.
//
// On a cluster (make test-cluster) every node has its own listener and
// exports its own process's series, as Prometheus expects of each
// instance (one scrape target per node, sum() at query time): the
// invoice's store, with its invoice actor, runs on whichever node
// rendezvous hashing picks, not necessarily on the node the test talks
// to. So the series of what the run did (requests, invoices, settles,
// store actors, restarts) are summed over the nodes, which also shows
// that no node counts the work another did; the series of a node's own
// state (backends, lag) are the first node's, as on a single node.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), "--dev", "--metrics-listen", "127.0.0.1:0")
	var addrs []string // each node's metrics listener, the first node's first
	for _, n := range s.nodes() {
		waitFor(t, 10*time.Second, "the metrics listener's log line", func() bool {
			m := metricsLine.FindStringSubmatch(n.ownLogs())
			if m != nil {
				addrs = append(addrs, m[1])
			}
			return m != nil
		})
	}
	st := s.createStore("--name", "Metrics", "--currency", "SATS")
	inv := s.json("POST", "/api/v1/stores/"+st.StoreID+"/invoices", st.APIKey, map[string]any{"amount": 1000, "currency": "SATS"}, 200)
	id := inv["id"].(string)
	s.mustCLI("sim", "pay", id, "--method", "lightning")
	waitFor(t, 30*time.Second, "the invoice to settle", func() bool {
		return s.json("GET", "/api/v1/stores/"+st.StoreID+"/invoices/"+id, st.APIKey, nil, 200)["status"] == "Settled"
	})
	// The settle lag is observed once the Lightning event's command has
	// returned, which may be a moment after the API shows the settle.
	var sum map[string]float64
	waitFor(t, 30*time.Second, "the settle's lag to be observed", func() bool {
		sum = map[string]float64{}
		for _, a := range addrs {
			for k, v := range scrapeMetrics(t, a) {
				sum[k] += v
			}
		}
		return sum[`kassa_lightning_settle_lag_seconds_count`] >= 1
	})
	got := scrapeMetrics(t, addrs[0])
	summed := map[string]float64{ // what the run did, over the nodes
		`kassa_http_requests_total{method="POST",route="/api/v1/stores/{storeId}/invoices",status="200"}`: 1,
		`kassa_http_requests_total{method="POST",route="/admin/v1/stores",status="200"}`:                  1,
		`kassa_invoices_created_total{method="lightning"}`:                                                1,
		`kassa_invoices_settled_total{method="lightning"}`:                                                1,
		`kassa_invoices_settled_total{method="onchain"}`:                                                  0,
		`kassa_lightning_settle_lag_seconds_count`:                                                        1,
		`kassa_actors{kind="store"}`:                                                                      2, // and --dev's demo store
		`kassa_forwards_pending`:                                                                          0,
		`kassa_actor_restarts_total{kind="invoice"}`:                                                      0,
	}
	if os.Getenv("KASSA_E2E_STORE") == "cluster" {
		// In a cluster the demo store's grain, made while the nodes were
		// still joining, is stopped when a topology change moves it and
		// is not started again until its store is asked for something:
		// only the store this test used must be live.
		delete(summed, `kassa_actors{kind="store"}`)
		if g := sum[`kassa_actors{kind="store"}`]; g < 1 || g > 2 {
			t.Errorf(`kassa_actors{kind="store"} = %v over %d nodes, want 1 or 2`, g, len(addrs))
		}
	}
	for k, v := range summed {
		if g, ok := sum[k]; !ok || g != v {
			t.Errorf("%s = %v over %d nodes (present %v), want %v", k, g, len(addrs), ok, v)
		}
	}
	want := map[string]float64{ // the first node's own state
		`kassa_lightning_connected`: 1,
		`kassa_chain_synced`:        1,
		`kassa_chain_lag_blocks`:    0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for _, k := range []string{"kassa_pebble_commit_duration_seconds_count", "kassa_disk_free_bytes", `kassa_rate_age_seconds{provider="fixed (simulation)"}`, "go_goroutines"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no series %s", k)
		}
	}
	// Pebble's memory outside Go's heap, on a single node.
	if !e2eOnPostgres() {
		if _, ok := got["kassa_pebble_block_cache_bytes"]; !ok {
			t.Error("no series kassa_pebble_block_cache_bytes")
		}
		if got["kassa_pebble_memtable_bytes"] <= 0 {
			t.Errorf("kassa_pebble_memtable_bytes = %v, want the memtable's allocation", got["kassa_pebble_memtable_bytes"])
		}
	}
	// Pebble's commit timer; PostgreSQL commits are not counted there
	// (KASSA_E2E_STORE=postgres).
	if !e2eOnPostgres() && got["kassa_pebble_commit_duration_seconds_count"] < 3 {
		t.Errorf("%v commits: the store, the invoice and its settle at least", got["kassa_pebble_commit_duration_seconds_count"])
	}
	if status, _, _ := s.do("GET", "/metrics", "", nil); status != http.StatusNotFound {
		t.Errorf("the public listener answers /metrics with %d", status)
	}
}
