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
// new member id, without a restart. Then every acknowledged invoice is
// there, every settled one has exactly one transfer and one fee line,
// balances add up, every event was delivered in order per endpoint,
// every open invoice expired within expiryBound of its deadline, each
// create request made one invoice at most (an acknowledged one, the
// invoice it was answered with), and the stalled node's writes after it
// woke were refused (by the membership fence, its step-down or the
// journal).
func TestClusterKillAndStall(t *testing.T) {
	nodes, _ := startCluster(t, 3, "--dev", "--invoice-expiry", clusterExpiry.String())
	sc := &killStall{t: t, nodes: nodes, rcv: newReceiver(t), stop: make(chan struct{}),
		ledger: &loadLedger{paid: map[string]string{}, store: map[string]string{}, orders: map[string]string{}, acked: map[int]int{}}}

	step(t, "create nine stores, each with a webhook added through the next node", sc.createShops)
	step(t, "load every node", sc.startLoad)
	step(t, "pick two nodes that run stores and kill one (SIGKILL)", sc.kill)
	step(t, "stall the other (SIGSTOP) past its lease and the invoices' expiry, and wake it", sc.stall)
	step(t, "the stalled node joins the cluster again without a restart", sc.rejoin)
	step(t, "load through the node that joined again, then stop the load", sc.stopLoad)
	step(t, "the live nodes see two members", sc.twoMembers)
	sc.ledger.mu.Lock()
	defer sc.ledger.mu.Unlock()
	step(t, "each live node acknowledged creates", sc.liveNodesAcked)
	step(t, "every acknowledged invoice ends Settled or Expired", sc.invoicesEnd)
	step(t, "one transfer and one fee line per settled invoice; balances add up", sc.ledgerAddsUp)
	step(t, "every event delivered in order per endpoint, every expiry within the bound", sc.webhooksDelivered)
	step(t, "one invoice per create request", sc.oneInvoicePerCreate)
	step(t, "the stalled node's writes after it woke were refused", sc.staleWritesRefused)
}

// killStall is TestClusterKillAndStall's scenario: the nodes, the shops
// and the load's ledger its steps share, and what each step found.
type killStall struct {
	t     *testing.T
	nodes []*server
	rcv   *receiver
	shops []killStallShop

	ledger  *loadLedger
	stop    chan struct{}
	wg      sync.WaitGroup
	failMu  sync.Mutex
	refused []string

	killed, stalled, survivor int
	killedAt, stalledAt       time.Time
	stalledLog                string // the stalled node's log once it joined again
	loadEnd                   time.Time
	live                      []*server
	final                     map[string]map[string]any // invoice id → the invoice as it ended
}

// killStallShop is a store of the scenario and its webhook endpoint's
// path on the receiver.
type killStallShop struct {
	creds storeCreds
	path  string
}

func (sc *killStall) createShops() {
	for i := 0; i < 9; i++ {
		s := sc.nodes[i%3]
		c := s.createStore("--name", fmt.Sprintf("Shop %d", i), "--percent-fee", "1")
		path := fmt.Sprintf("/shop%d", i)
		addWebhook(sc.t, sc.nodes[(i+1)%3], c, map[string]any{"url": sc.rcv.url(path)})
		sc.shops = append(sc.shops, killStallShop{c, path})
	}
}

func (sc *killStall) startLoad() {
	for n, s := range sc.nodes {
		sc.wg.Add(1)
		go sc.load(n, s)
	}
}

// load drives node n (s) until the test stops it or the process ends.
func (sc *killStall) load(n int, s *server) {
	defer sc.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-sc.stop:
			return
		case <-s.done:
			return
		default:
		}
		sh := sc.shops[rand.IntN(len(sc.shops))]
		orderID := fmt.Sprintf("load-%d-%d-%d", n, s.cmd.Process.Pid, i)
		start := time.Now()
		status, body, err := post(s, "/api/v1/stores/"+sh.creds.StoreID+"/invoices", sh.creds.APIKey,
			map[string]any{"amount": "5000", "currency": "SATS", "orderId": orderID})
		call := timedCall{start: start, end: time.Now(), status: status}
		if err != nil || status != 200 {
			sc.ledger.order(orderID, "", n, call)
			sc.failMu.Lock()
			sc.refused = append(sc.refused, fmt.Sprintf("node %d: %d %v %s", n, status, err, body))
			sc.failMu.Unlock()
			time.Sleep(50 * time.Millisecond) // a node going away refuses at once
			continue
		}
		var inv struct{ ID string }
		_ = json.Unmarshal(body, &inv)
		sc.ledger.order(orderID, inv.ID, n, call)
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
		sc.ledger.add(inv.ID, sh.creds.StoreID, how)
	}
}

// kill picks the victims, two nodes that run stores, after steady load,
// and kills the first.
func (sc *killStall) kill() {
	t := sc.t
	time.Sleep(4 * time.Second) // steady load before the faults
	var victims []int
	for n, s := range sc.nodes {
		if clusterHealth(s).Stores > 0 {
			victims = append(victims, n)
		}
	}
	if len(victims) < 2 {
		close(sc.stop)
		sc.wg.Wait()
		t.Fatalf("nine stores run on %d node(s): placement does not spread", len(victims))
	}
	sc.killed, sc.stalled = victims[0], victims[1]
	sc.survivor = 3 - sc.killed - sc.stalled
	sc.killedAt = time.Now()
	sc.nodes[sc.killed].Kill()
	t.Logf("killed node %d (SIGKILL) at %s", sc.killed, sc.killedAt.Format("15:04:05.000"))
}

func (sc *killStall) stall() {
	t := sc.t
	time.Sleep(2 * time.Second)
	// Fresh open invoices on every store right before the stall, so that
	// the stalled node holds invoices that expire while it sleeps.
	for _, sh := range sc.shops {
		if status, body, err := post(sc.nodes[sc.survivor], "/api/v1/stores/"+sh.creds.StoreID+"/invoices", sh.creds.APIKey,
			map[string]any{"amount": "3000", "currency": "SATS"}); err == nil && status == 200 {
			var inv struct{ ID string }
			_ = json.Unmarshal(body, &inv)
			sc.ledger.add(inv.ID, sh.creds.StoreID, "")
		}
	}
	sc.stalledAt = time.Now()
	if err := sc.nodes[sc.stalled].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped node %d (SIGSTOP) at %s", sc.stalled, sc.stalledAt.Format("15:04:05.000"))
	time.Sleep(clusterExpiry + 3*time.Second) // longer than the 3 s lease and the invoices' expiry
	if err := sc.nodes[sc.stalled].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("woke node %d (SIGCONT) after %v", sc.stalled, time.Since(sc.stalledAt).Round(time.Second))
}

// rejoin waits until the stalled node, which finds its membership gone,
// steps down and joins again under a new member id, without a restart.
func (sc *killStall) rejoin() {
	t, stalled := sc.t, sc.nodes[sc.stalled]
	waitFor(t, 60*time.Second, "the stalled node joins the cluster again", func() bool {
		select {
		case <-stalled.done:
			t.Fatalf("the stalled node exited after it woke without its membership:\n%s", stalled.ownLogs())
		default:
		}
		return strings.Contains(stalled.ownLogs(), `msg="joined the cluster again"`)
	})
	t.Logf("the stalled node joined the cluster again %v after it woke", time.Since(sc.stalledAt.Add(clusterExpiry+3*time.Second)).Round(time.Millisecond))
	sc.stalledLog = stalled.Logs()
	if !strings.Contains(sc.stalledLog, "cluster membership lost") {
		t.Errorf("the stalled node joined again without saying it lost its membership")
	}
}

func (sc *killStall) stopLoad() {
	time.Sleep(4 * time.Second) // load through the node that joined again
	close(sc.stop)
	sc.wg.Wait()
	sc.loadEnd = time.Now()
}

func (sc *killStall) twoMembers() {
	sc.live = []*server{sc.nodes[sc.survivor], sc.nodes[sc.stalled]}
	for _, s := range sc.live {
		waitFor(sc.t, 30*time.Second, "the live nodes see two members", func() bool { return len(clusterHealth(s).Members) == 2 })
	}
}

// liveNodesAcked checks invariants, not counts (a loaded machine
// acknowledges fewer): each node that ran to the end acknowledged
// creates. It logs how long the creates in flight at the kill waited.
func (sc *killStall) liveNodesAcked() {
	t, ledger, refused := sc.t, sc.ledger, sc.refused
	t.Logf("%d invoices acknowledged, %d creates refused or failed", len(ledger.paid), len(refused))
	for i := 0; i < len(refused); i += max(1, len(refused)/10) {
		t.Logf("refused: %.300s", refused[i])
	}
	for _, n := range []int{sc.survivor, sc.stalled} {
		if ledger.acked[n] == 0 {
			t.Fatalf("node %d acknowledged no create under load:\n%s", n, strings.Join(refused, "\n"))
		}
	}
	// The creates in flight at the kill: how long they waited for an
	// answer (the lost node's own are cut off by the kill).
	var inFlight []time.Duration
	for _, c := range ledger.calls {
		if c.start.Before(sc.killedAt) && c.end.After(sc.killedAt) && c.status != 0 {
			inFlight = append(inFlight, c.end.Sub(sc.killedAt))
		}
	}
	slices.Sort(inFlight)
	if len(inFlight) > 0 {
		t.Logf("creates in flight at the kill: %d, answered after the kill in p50 %v, max %v",
			len(inFlight), inFlight[len(inFlight)/2].Round(time.Millisecond), inFlight[len(inFlight)-1].Round(time.Millisecond))
	}
}

// invoicesEnd waits until every acknowledged invoice is there and ends
// Settled (paid) or Expired (left open), read through either live node,
// and checks that every paid one is Settled.
func (sc *killStall) invoicesEnd() {
	t, ledger, live := sc.t, sc.ledger, sc.live
	keys := map[string]string{}
	for _, sh := range sc.shops {
		keys[sh.creds.StoreID] = sh.creds.APIKey
	}
	final := map[string]map[string]any{}
	sc.final = final
	// waiting says, should the wait time out, which invoice it waited
	// for and what the live nodes answered of it.
	var waiting string
	waitTimeout := clusterExpiry + expiryBound + time.Until(sc.loadEnd.Add(clusterExpiry))
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
}

// ledgerAddsUp checks one transfer and one fee line per settled invoice,
// none for the others, and that the balance is the top-ups less the fees.
func (sc *killStall) ledgerAddsUp() {
	t, survivor := sc.t, sc.nodes[sc.survivor]
	balances := map[string]float64{}
	out := survivor.mustCLI("store", "list")
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
	for _, sh := range sc.shops {
		lines := survivor.list("/api/v1/stores/"+sh.creds.StoreID+"/transactions", sh.creds.APIKey)
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
		for id, inv := range sc.final {
			if sc.ledger.store[id] != sh.creds.StoreID {
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
}

// webhooksDelivered checks that every event was delivered (duplicates
// allowed), in order per endpoint, and every expiry within the bound.
func (sc *killStall) webhooksDelivered() {
	t := sc.t
	var expiredLate []time.Duration
	for id, inv := range sc.final {
		path := ""
		for _, sh := range sc.shops {
			if sh.creds.StoreID == sc.ledger.store[id] {
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
		sc.waitEvents(path, id, want)
		evs := sc.rcv.eventsFor(path, id)
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
						t.Logf("invoice %s of store %s: Expired arrived %v after its deadline %v", id, sc.ledger.store[id], late.Round(time.Millisecond), deadline.Format("15:04:05"))
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
}

// waitEvents waits until the receiver has, at path, each event type in
// want of invoice id.
func (sc *killStall) waitEvents(path, id string, want []string) {
	waitFor(sc.t, 20*time.Second, fmt.Sprintf("events %v of invoice %s", want, id), func() bool {
		first := map[string]int{}
		evs := sc.rcv.eventsFor(path, id)
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
}

// oneInvoicePerCreate checks that every acknowledged request's order id
// is on exactly its invoice, and that no request, acknowledged or not
// (a 503 whose create went through), made two.
func (sc *killStall) oneInvoicePerCreate() {
	t := sc.t
	perOrder := map[string][]string{}
	for _, sh := range sc.shops {
		for _, inv := range sc.nodes[sc.survivor].list("/api/v1/stores/"+sh.creds.StoreID+"/invoices", sh.creds.APIKey) {
			if o, _ := inv["orderId"].(string); strings.HasPrefix(o, "load-") {
				perOrder[o] = append(perOrder[o], inv["id"].(string))
			}
		}
	}
	acked, twice, lost, unacked := 0, 0, 0, 0
	for o, id := range sc.ledger.orders {
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
		len(sc.ledger.orders), acked, twice, lost, unacked)
}

// staleWritesRefused checks that the stalled node, which woke with stale
// actors, had what they wrote refused: by the membership fence (the
// survivors expelled it), by the journal over the other nodes' events,
// or by the node itself once it knew it had lost its membership and
// stepped down.
func (sc *killStall) staleWritesRefused() {
	t, stalledLog := sc.t, sc.stalledLog
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
