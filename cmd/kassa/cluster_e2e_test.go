package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest/harness"
)

// clusterExpiry is the invoices' expiry in the cluster tests, and
// expiryBound how late after it an open invoice may expire when the node
// that ran it was lost: the etcd lease (3 s), the new owner's sweep, and
// the webhook delivery (docs/decisions.md, "Cluster mode").
const (
	clusterExpiry = 10 * time.Second
	expiryBound   = 10 * time.Second
)

// startCluster starts PostgreSQL, etcd and n Kassa nodes that share them.
// It returns the nodes and the serve flags of each (to restart one).
func startCluster(t *testing.T, n int, extra ...string) ([]*server, [][]string) {
	t.Helper()
	needBinary(t)
	nodes, flags, _, _ := startClusterInfra(t, n, nil, extra...)
	return nodes, flags
}

// startClusterInfra is startCluster that also returns the PostgreSQL
// and etcd servers, for tests that take them away; via, when set, gives
// node i the address it reaches etcd at (a proxy to cut).
func startClusterInfra(t *testing.T, n int, via func(i int, et *harness.Etcd) string, extra ...string) ([]*server, [][]string, *harness.Postgres, *harness.Etcd) {
	t.Helper()
	needBinary(t)
	pg, dsn := harness.PostgresForTest(t)
	et := harness.EtcdForTest(t)
	var nodes []*server
	var flags [][]string
	certs := filepath.Join(t.TempDir(), "cluster-certs")
	for i := 0; i < n; i++ {
		etcdURL := et.ClusterURL()
		if via != nil {
			etcdURL = via(i, et)
		}
		args := append([]string{"--store", dsn, "--cluster", etcdURL,
			"--node-listen", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}, nodeTLSArgs(t, certs)...)
		args = append(args, extra...)
		nodes = append(nodes, launchServer(t, t.TempDir(), args...))
		flags = append(flags, args)
	}
	for _, s := range nodes {
		waitFor(t, 30*time.Second, "every node sees every member", func() bool { return len(clusterHealth(s).Members) == n })
	}
	return nodes, flags, pg, et
}

// nodeHealth is the cluster part of a node's health.
type nodeHealth struct {
	Address string   `json:"address"`
	Members []string `json:"members"`
	Stores  int      `json:"stores"`
	Owning  bool     `json:"owning"`
	Fenced  string   `json:"fenced"`
}

// clusterHealth reads a node's view of the cluster; zero when it does
// not answer.
func clusterHealth(s *server) nodeHealth {
	var h struct {
		Cluster nodeHealth `json:"cluster"`
	}
	req, err := http.NewRequest("GET", s.url+"/api/v1/health", nil)
	if err != nil {
		return nodeHealth{}
	}
	// The cluster's details are for the admin token.
	if token, err := os.ReadFile(filepath.Join(s.data, "admin.token")); err == nil {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	res, err := quickClient.Do(req)
	if err != nil {
		return nodeHealth{}
	}
	defer res.Body.Close()
	_ = json.NewDecoder(res.Body).Decode(&h)
	return h.Cluster
}

// quickClient gives up on a stalled node sooner than the load lasts.
var quickClient = &http.Client{Timeout: 15 * time.Second}

// post sends an API request without failing the test (the load runs in
// goroutines, and a request to a lost node may fail).
func post(s *server, path, key string, body any) (int, []byte, error) {
	data, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", s.url+path, strings.NewReader(string(data)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	res, err := quickClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// loadLedger is what the load did: each acknowledged invoice, and how it
// was paid (empty: left open).
type loadLedger struct {
	mu    sync.Mutex
	paid  map[string]string // invoice id → "lightning", "onchain" or ""
	store map[string]string // invoice id → store id
	// orders are the order id of each create request sent: acknowledged
	// (its invoice id) or not (""); each request made one invoice at most.
	orders map[string]string
	// calls are the creates' times, to tell how long those in flight at
	// the kill waited for their answer.
	calls []timedCall
	// acked counts the acknowledged creates per node.
	acked map[int]int
}

// timedCall is when a create was sent and answered, and how.
type timedCall struct {
	start, end time.Time
	status     int
}

func (l *loadLedger) order(id, invoiceID string, node int, c timedCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.orders[id] = invoiceID
	l.calls = append(l.calls, c)
	if invoiceID != "" {
		l.acked[node]++
	}
}

// unmined marks, in a loadLedger, an invoice whose on-chain payment was
// made (or tried) in a simulated mempool that was not mined: it ends
// Settled (the mine went through) or stays Processing (it did not), and
// may also expire when the payment never reached the mempool.
const unmined = "onchain, maybe unmined"

func (l *loadLedger) add(id, store, how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paid[id], l.store[id] = how, store
}

// TestClusterKillAndStall runs three nodes on loopback over PostgreSQL
// and etcd under steady load (creates, Lightning and on-chain payments
// through the simulators, webhooks to a local receiver), kills one with
// SIGKILL, stops another with SIGSTOP for longer than its etcd lease and
// wakes it again: it finds its membership lost and joins again under a
// new member id, without a restart. Then every acknowledged invoice is there, every settled
// one has exactly one transfer and one fee line, balances add up, every
// event was delivered in order per endpoint, every open invoice expired
// within expiryBound of its deadline, and the stalled node's writes after
// it woke were refused by the journal.
func TestClusterKillAndStall(t *testing.T) {
	nodes, _ := startCluster(t, 3, "--dev", "--invoice-expiry", clusterExpiry.String())
	rcv := newReceiver(t)

	type shop struct {
		creds storeCreds
		path  string
	}
	var shops []shop
	for i := 0; i < 9; i++ {
		s := nodes[i%3]
		c := s.createStore("--name", fmt.Sprintf("Shop %d", i), "--percent-fee", "1")
		path := fmt.Sprintf("/shop%d", i)
		addWebhook(t, nodes[(i+1)%3], c, map[string]any{"url": rcv.url(path)})
		shops = append(shops, shop{c, path})
	}

	ledger := &loadLedger{paid: map[string]string{}, store: map[string]string{}, orders: map[string]string{}, acked: map[int]int{}}
	var (
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		failMu  sync.Mutex
		refused []string
	)
	// load drives node n (s) until the test stops it or the process ends.
	load := func(n int, s *server) {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-s.done:
				return
			default:
			}
			sh := shops[rand.IntN(len(shops))]
			orderID := fmt.Sprintf("load-%d-%d-%d", n, s.cmd.Process.Pid, i)
			start := time.Now()
			status, body, err := post(s, "/api/v1/stores/"+sh.creds.StoreID+"/invoices", sh.creds.APIKey,
				map[string]any{"amount": "5000", "currency": "SATS", "orderId": orderID})
			call := timedCall{start: start, end: time.Now(), status: status}
			if err != nil || status != 200 {
				ledger.order(orderID, "", n, call)
				failMu.Lock()
				refused = append(refused, fmt.Sprintf("node %d: %d %v %s", n, status, err, body))
				failMu.Unlock()
				time.Sleep(50 * time.Millisecond) // a node going away refuses at once
				continue
			}
			var inv struct{ ID string }
			_ = json.Unmarshal(body, &inv)
			ledger.order(orderID, inv.ID, n, call)
			how := ""
			switch i % 3 {
			case 0:
				if _, err := s.cli("sim", "pay", inv.ID, "--method", "lightning"); err == nil {
					how = "lightning"
				}
			case 1:
				// Each node simulates a chain of its own: a payment
				// that node's mempool took but did not mine (the node
				// was killed or stopped in between) stays unconfirmed
				// for good, and its invoice Processing.
				how = unmined
				if _, err := s.cli("sim", "pay", inv.ID, "--method", "onchain"); err == nil {
					if _, err := s.cli("sim", "mine", "1"); err == nil {
						how = "onchain"
					}
				}
			}
			ledger.add(inv.ID, sh.creds.StoreID, how)
		}
	}
	for n, s := range nodes {
		wg.Add(1)
		go load(n, s)
	}

	// The victims: two nodes that run stores.
	time.Sleep(4 * time.Second) // steady load before the faults
	var victims []int
	for n, s := range nodes {
		if clusterHealth(s).Stores > 0 {
			victims = append(victims, n)
		}
	}
	if len(victims) < 2 {
		close(stop)
		wg.Wait()
		t.Fatalf("nine stores run on %d node(s): placement does not spread", len(victims))
	}
	killed, stalled := victims[0], victims[1]
	survivor := 3 - killed - stalled
	killedAt := time.Now()
	nodes[killed].Kill()
	t.Logf("killed node %d (SIGKILL) at %s", killed, killedAt.Format("15:04:05.000"))

	time.Sleep(2 * time.Second)
	// Fresh open invoices on every store right before the stall, so that
	// the stalled node holds invoices that expire while it sleeps.
	for _, sh := range shops {
		if status, body, err := post(nodes[survivor], "/api/v1/stores/"+sh.creds.StoreID+"/invoices", sh.creds.APIKey,
			map[string]any{"amount": "3000", "currency": "SATS"}); err == nil && status == 200 {
			var inv struct{ ID string }
			_ = json.Unmarshal(body, &inv)
			ledger.add(inv.ID, sh.creds.StoreID, "")
		}
	}
	stalledAt := time.Now()
	if err := nodes[stalled].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped node %d (SIGSTOP) at %s", stalled, stalledAt.Format("15:04:05.000"))
	time.Sleep(clusterExpiry + 3*time.Second) // longer than the 3 s lease and the invoices' expiry
	if err := nodes[stalled].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("woke node %d (SIGCONT) after %v", stalled, time.Since(stalledAt).Round(time.Second))
	// It finds its membership gone, steps down and joins again under a
	// new member id, without a restart.
	waitFor(t, 60*time.Second, "the stalled node joins the cluster again", func() bool {
		select {
		case <-nodes[stalled].done:
			t.Fatalf("the stalled node exited after it woke without its membership:\n%s", nodes[stalled].ownLogs())
		default:
		}
		return strings.Contains(nodes[stalled].ownLogs(), `msg="joined the cluster again"`)
	})
	t.Logf("the stalled node joined the cluster again %v after it woke", time.Since(stalledAt.Add(clusterExpiry+3*time.Second)).Round(time.Millisecond))
	stalledLog := nodes[stalled].Logs()
	if !strings.Contains(stalledLog, "cluster membership lost") {
		t.Errorf("the stalled node joined again without saying it lost its membership")
	}
	time.Sleep(4 * time.Second) // load through the node that joined again
	close(stop)
	wg.Wait()
	loadEnd := time.Now()

	live := []*server{nodes[survivor], nodes[stalled]}
	for _, s := range live {
		waitFor(t, 30*time.Second, "the live nodes see two members", func() bool { return len(clusterHealth(s).Members) == 2 })
	}
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	t.Logf("%d invoices acknowledged, %d creates refused or failed", len(ledger.paid), len(refused))
	for i := 0; i < len(refused); i += max(1, len(refused)/10) {
		t.Logf("refused: %.300s", refused[i])
	}
	// Invariants, not counts (a loaded machine acknowledges fewer):
	// each node that ran to the end acknowledged creates.
	for _, n := range []int{survivor, stalled} {
		if ledger.acked[n] == 0 {
			t.Fatalf("node %d acknowledged no create under load:\n%s", n, strings.Join(refused, "\n"))
		}
	}
	// The creates in flight at the kill: how long they waited for an
	// answer (the lost node's own are cut off by the kill).
	var inFlight []time.Duration
	for _, c := range ledger.calls {
		if c.start.Before(killedAt) && c.end.After(killedAt) && c.status != 0 {
			inFlight = append(inFlight, c.end.Sub(killedAt))
		}
	}
	slices.Sort(inFlight)
	if len(inFlight) > 0 {
		t.Logf("creates in flight at the kill: %d, answered after the kill in p50 %v, max %v",
			len(inFlight), inFlight[len(inFlight)/2].Round(time.Millisecond), inFlight[len(inFlight)-1].Round(time.Millisecond))
	}

	// Every acknowledged invoice is there and ends Settled (paid) or
	// Expired (left open), read through either live node.
	keys := map[string]string{}
	for _, sh := range shops {
		keys[sh.creds.StoreID] = sh.creds.APIKey
	}
	final := map[string]map[string]any{}
	// waiting says, should the wait time out, which invoice it waited
	// for and what the live nodes answered of it.
	var waiting string
	waitTimeout := clusterExpiry + expiryBound + time.Until(loadEnd.Add(clusterExpiry))
	for waitStart := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		done := true
		for id, storeID := range ledger.store {
			if _, ok := final[id]; ok {
				continue
			}
			s := live[len(final)%2]
			status, body, _ := s.do("GET", "/api/v1/stores/"+storeID+"/invoices/"+id, keys[storeID], nil)
			if status == 404 {
				t.Fatalf("acknowledged invoice %s is missing", id)
			}
			var inv map[string]any
			if status != 200 || json.Unmarshal(body, &inv) != nil {
				waiting, done = fmt.Sprintf("invoice %s of store %s (paid by %q): the node answered %d %.300s", id, storeID, ledger.paid[id], status, body), false
				break
			}
			if inv["status"] != "Settled" && inv["status"] != "Expired" && !(ledger.paid[id] == unmined && inv["status"] == "Processing") {
				waiting, done = fmt.Sprintf("invoice %s of store %s (paid by %q) is %v, expires %v: %.600s", id, storeID, ledger.paid[id], inv["status"], inv["expirationTime"], body), false
				break
			}
			final[id] = inv
		}
		if done {
			break
		}
		if time.Since(waitStart) > waitTimeout {
			t.Fatalf("timed out after %v waiting for every invoice settled or expired (%d of %d are); still waiting for %s", waitTimeout, len(final), len(ledger.store), waiting)
		}
	}
	for id, how := range ledger.paid {
		if how != "" && how != unmined && final[id]["status"] != "Settled" {
			t.Errorf("invoice %s paid by %s is %v", id, how, final[id]["status"])
		}
	}

	// Ledger: one transfer and one fee line per settled invoice; the
	// balance is the top-ups less the fees.
	balances := map[string]float64{}
	out := nodes[survivor].mustCLI("store", "list")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var st struct {
			ID      string  `json:"storeId"`
			Balance float64 `json:"balance"`
		}
		if err := json.Unmarshal([]byte(line), &st); err != nil {
			t.Fatalf("store list printed %q: %v", line, err)
		}
		balances[st.ID] = st.Balance
	}
	for _, sh := range shops {
		lines := nodes[survivor].list("/api/v1/stores/"+sh.creds.StoreID+"/transactions", sh.creds.APIKey)
		perInvoice := map[string][]string{}
		sum := 0.0
		for _, l := range lines {
			switch l["type"] {
			case "topup":
				sum += num(l, "amount")
			case "fee":
				sum -= num(l, "amount")
			}
			if id, _ := l["invoiceId"].(string); id != "" {
				perInvoice[id] = append(perInvoice[id], l["type"].(string))
			}
		}
		if sum != balances[sh.creds.StoreID] {
			t.Errorf("store %s: balance %v, ledger lines add up to %v", sh.creds.StoreID, balances[sh.creds.StoreID], sum)
		}
		for id, inv := range final {
			if ledger.store[id] != sh.creds.StoreID {
				continue
			}
			got := fmt.Sprint(perInvoice[id])
			switch inv["status"] {
			case "Settled":
				if got != "[transfer fee]" && got != "[fee transfer]" {
					t.Errorf("settled invoice %s has ledger lines %s, want one transfer and one fee", id, got)
				}
			default:
				if len(perInvoice[id]) != 0 {
					t.Errorf("%v invoice %s has ledger lines %s", inv["status"], id, got)
				}
			}
		}
	}

	// Webhooks: every event delivered (duplicates allowed), in order per
	// endpoint, and every expiry within the bound.
	var expiredLate []time.Duration
	for id, inv := range final {
		path := ""
		for _, sh := range shops {
			if sh.creds.StoreID == ledger.store[id] {
				path = sh.path
			}
		}
		want := []string{"New", "Settled"}
		switch inv["status"] {
		case "Expired":
			want = []string{"New", "Expired"}
		case "Processing":
			want = []string{"New", "Processing"}
		}
		deadline := time.Unix(int64(num(inv, "createdAt")), 0).Add(clusterExpiry)
		waitFor(t, 20*time.Second, fmt.Sprintf("events %v of invoice %s", want, id), func() bool {
			first := map[string]int{}
			evs := rcv.eventsFor(path, id)
			for i, h := range evs {
				if _, ok := first[h.event().Type]; !ok {
					first[h.event().Type] = i
				}
			}
			for _, w := range want {
				if _, ok := first[w]; !ok {
					return false
				}
			}
			return true
		})
		evs := rcv.eventsFor(path, id)
		var order []string
		seen := map[string]bool{}
		for _, h := range evs {
			if typ := h.event().Type; !seen[typ] {
				seen[typ] = true
				order = append(order, typ)
				if typ == "Expired" {
					late := h.At.Sub(deadline)
					expiredLate = append(expiredLate, late)
					if late > 6*time.Second {
						t.Logf("invoice %s of store %s: Expired arrived %v after its deadline %v", id, ledger.store[id], late.Round(time.Millisecond), deadline.Format("15:04:05"))
					}
					if late > expiryBound+time.Second {
						t.Errorf("invoice %s expired %v after its deadline, bound %v", id, late.Round(time.Millisecond), expiryBound)
					}
				}
			}
		}
		if order[0] != "New" || order[len(order)-1] != want[1] {
			t.Errorf("invoice %s: events first arrived in the order %v", id, order)
		}
	}

	if len(expiredLate) > 0 {
		slices.Sort(expiredLate)
		t.Logf("Expired webhooks: %d, after the deadline p50 %v, max %v (deadlines read to the second)", len(expiredLate),
			expiredLate[len(expiredLate)/2].Round(time.Millisecond), expiredLate[len(expiredLate)-1].Round(time.Millisecond))
	}

	// One invoice per create request: every acknowledged request's
	// order id is on exactly its invoice, and no request, acknowledged
	// or not (a 503 whose create went through), made two.
	perOrder := map[string][]string{}
	for _, sh := range shops {
		for _, inv := range nodes[survivor].list("/api/v1/stores/"+sh.creds.StoreID+"/invoices", sh.creds.APIKey) {
			if o, _ := inv["orderId"].(string); strings.HasPrefix(o, "load-") {
				perOrder[o] = append(perOrder[o], inv["id"].(string))
			}
		}
	}
	acked, twice, lost, unacked := 0, 0, 0, 0
	for o, id := range ledger.orders {
		got := perOrder[o]
		switch {
		case len(got) > 1:
			twice++
			t.Errorf("create request %s made %d invoices: %v", o, len(got), got)
		case id != "" && (len(got) == 0 || got[0] != id):
			lost++
			t.Errorf("create request %s was answered with invoice %s; its order id is on %v", o, id, got)
		case id == "" && len(got) == 1:
			unacked++ // answered 503 or cut off, and made: allowed
		}
		if id != "" {
			acked++
		}
	}
	t.Logf("create requests: %d sent, %d acknowledged, %d made two invoices, %d lost, %d unacknowledged but made",
		len(ledger.orders), acked, twice, lost, unacked)

	// The stalled node woke with stale actors; what they wrote was
	// refused: by the membership fence (the survivors expelled it), by
	// the journal over the other nodes' events, or by the node itself
	// once it knew it had lost its membership and stepped down.
	fenced := strings.Count(stalledLog, "no longer a member of the cluster") +
		strings.Count(stalledLog, "lost its cluster membership and is joining again: try again\"")
	conflicts := strings.Count(stalledLog, "written by another activation")
	if fenced+conflicts == 0 {
		var lines []string
		for _, l := range strings.Split(stalledLog, "\n") {
			if strings.Contains(l, "etcd") || strings.Contains(l, "membership") || strings.Contains(l, "Expired") || strings.Contains(l, "refused") {
				lines = append(lines, l)
			}
		}
		t.Errorf("the stalled node logged no refused write after it woke:\n%s", strings.Join(lines, "\n"))
	} else {
		t.Logf("the stalled node's writes refused after it woke: %d by the membership fence or its step-down, %d by the journal", fenced, conflicts)
	}
}
