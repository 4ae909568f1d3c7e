//go:build itest

package itest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/apitest"
	"github.com/kassapay/kassa/kassatest/harness"
)

// clusterHealth is the cluster part of a node's health check.
type clusterHealth struct {
	Cluster struct {
		Address string   `json:"address"`
		Members []string `json:"members"`
		Stores  int      `json:"stores"`
		Leases  []struct {
			Role  string `json:"role"`
			Held  bool   `json:"held"`
			Epoch int64  `json:"epoch"`
		} `json:"leases"`
	} `json:"cluster"`
	Chain struct {
		Synced  bool   `json:"synced"`
		Warning string `json:"warning"`
	} `json:"chain"`
}

var healthClient = &http.Client{Timeout: 5 * time.Second}

// nodeHealth reads a node's health; ok is false when it does not answer.
func nodeHealth(k *harness.Kassa) (h clusterHealth, ok bool) {
	req, err := http.NewRequest("GET", k.URL+"/api/v1/health", nil)
	if err != nil {
		return h, false
	}
	req.Header.Set("Authorization", "Bearer "+k.AdminToken()) // the cluster's details
	res, err := healthClient.Do(req)
	if err != nil {
		return h, false
	}
	defer res.Body.Close()
	return h, res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&h) == nil
}

// checkHealthDoc checks k's health answer against the OpenAPI document.
func checkHealthDoc(t *testing.T, k *harness.Kassa) {
	t.Helper()
	req, err := http.NewRequest("GET", k.URL+"/api/v1/health", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+k.AdminToken())
	res, err := healthClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if problems := apitest.Check(apitest.Exchange{Request: req, Status: res.StatusCode, Header: res.Header, Body: body}); len(problems) > 0 {
		t.Errorf("health %s against the OpenAPI document: %v", body, problems)
	}
}

// watcherEpoch is the epoch at which k holds the chain-watcher lease, 0
// when it does not.
func watcherEpoch(k *harness.Kassa) int64 {
	h, _ := nodeHealth(k)
	for _, l := range h.Cluster.Leases {
		if l.Role == "chain-watcher" && l.Held {
			return l.Epoch
		}
	}
	return 0
}

// transferLines counts the transfer lines of invoice id in the store's
// transactions.
func transferLines(t *testing.T, k *harness.Kassa, s harness.Store, id string) int {
	t.Helper()
	var txs []struct {
		InvoiceID string `json:"invoiceId"`
		Type      string `json:"type"`
		Status    string `json:"status"`
	}
	k.Do("GET", "/api/v1/stores/"+s.StoreID+"/transactions", s.APIKey, nil, &txs)
	n := 0
	for _, tx := range txs {
		if tx.InvoiceID == id && tx.Type == "transfer" {
			n++
		}
	}
	return n
}

// TestClusterChainWatcherTakeover: two `kassa serve` nodes in cluster
// mode (PostgreSQL, etcd) on one btcd. Exactly one holds the
// chain-watcher lease; it settles the on-chain payment of an invoice
// whose store runs on the other node (whose address it learned through
// the store). Then the lease holder is killed with SIGKILL: the other
// node takes the lease over with the next epoch, resumes from the
// cursor, and settles a second payment. Each invoice is settled once,
// with one transfer line.
func TestClusterChainWatcherTakeover(t *testing.T) {
	t.Parallel()
	dsn := harness.PostgresSchema(t)
	et := harness.EtcdForTest(t)

	wallet := harness.NewWallet(t, harness.ParamsOf("regtest"))
	node := harness.StartNode(t, harness.NodeConfig{MiningAddr: wallet.Address()})
	node.Mine(102)
	cluster := harness.NewClusterNodes(t, et.ClusterURL(), dsn)
	start := func() *harness.Kassa {
		return harness.StartKassa(t, "", append([]string{"--chain", chainURL(node)}, cluster.Next()...)...)
	}
	nodes := []*harness.Kassa{start(), start()}
	kassatest.Eventually(t, 30*time.Second, "both nodes to see two members and one chain watcher", func() error {
		held := 0
		for i, k := range nodes {
			h, ok := nodeHealth(k)
			if !ok || len(h.Cluster.Members) != 2 {
				return fmt.Errorf("node %d: members %v", i, h.Cluster.Members)
			}
			if watcherEpoch(k) > 0 {
				held++
			}
		}
		if held != 1 {
			return fmt.Errorf("%d nodes hold the chain-watcher lease", held)
		}
		return nil
	})
	leader, other := nodes[0], nodes[1]
	if watcherEpoch(other) > 0 {
		leader, other = other, leader
	}
	if h, _ := nodeHealth(other); !strings.HasPrefix(h.Chain.Warning, "standby") {
		t.Errorf("the standby node's chain health %+v, want a standby warning", h.Chain)
	}
	checkHealthDoc(t, leader)
	checkHealthDoc(t, other)

	// A store that runs on the standby node: its addresses are derived
	// there, and the lease holder must find them through the store.
	var store harness.Store
	var first harness.Invoice
	kassatest.Eventually(t, 30*time.Second, "a store that runs on the standby node", func() error {
		store = leader.CreateStore("--name", "Cluster shop", "--xpub", testXpub(t), "--confirmations", "1")
		first = other.CreateInvoice(store, 30_000) // activates the store's grain on its owner
		if h, _ := nodeHealth(other); h.Cluster.Stores == 0 {
			return fmt.Errorf("the store runs on the lease holder")
		}
		return nil
	})
	pay := func(inv harness.Invoice, sats int64) {
		wallet.Pay(t, node, harness.Output{Address: inv.OnchainAddress, Amount: sats})
		other.WaitStatus(store, inv.ID, "Processing", "")
		node.Mine(1)
		other.WaitStatus(store, inv.ID, "Settled", "None")
	}
	pay(first, 30_000)
	epoch := watcherEpoch(leader)

	// The lease holder dies; the other node takes the lease over.
	killed := time.Now()
	leader.Kill()
	kassatest.Eventually(t, 30*time.Second, "the surviving node to take the chain-watcher lease", func() error {
		if e := watcherEpoch(other); e <= epoch {
			return fmt.Errorf("epoch %d", e)
		}
		return nil
	})
	t.Logf("chain-watcher lease taken over %v after the SIGKILL", time.Since(killed).Round(100*time.Millisecond))
	checkHealthDoc(t, other)
	second := other.CreateInvoice(store, 40_000)
	pay(second, 40_000)

	for _, inv := range []harness.Invoice{first, second} {
		if n := transferLines(t, other, store, inv.ID); n != 1 {
			t.Errorf("invoice %s has %d transfer lines, want 1", inv.ID, n)
		}
		if ps := other.Payments(store, inv.ID); len(ps) != 1 || ps[0].Status != "Settled" {
			t.Errorf("invoice %s payments %+v, want one settled", inv.ID, ps)
		}
	}
}
