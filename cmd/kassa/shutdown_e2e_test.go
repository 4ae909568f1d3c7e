package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/webhook"
)

// gatedReceiver is a webhook endpoint that holds every event delivery
// until its gate opens; URL checks pass at once.
type gatedReceiver struct {
	srv  *httptest.Server
	gate chan struct{}

	mu        sync.Mutex
	inFlight  int
	delivered map[string]int // delivery id → answered 200 this many times
}

func newGatedReceiver(t *testing.T) *gatedReceiver {
	r := &gatedReceiver{gate: make(chan struct{}), delivered: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		id := req.Header.Get(webhook.DeliveryIDHeader)
		if id == "" {
			return // the URL check
		}
		r.mu.Lock()
		r.inFlight++
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.inFlight--
			r.mu.Unlock()
		}()
		select {
		case <-r.gate:
		case <-req.Context().Done():
			return
		}
		r.mu.Lock()
		r.delivered[id]++
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *gatedReceiver) held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inFlight
}

// sigterm sends SIGTERM and returns the exit code once the process ends.
func (s *server) sigterm() int {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	<-s.done
	s.cmd.Wait()
	return s.cmd.ProcessState.ExitCode()
}

// TestGracefulShutdown sends SIGTERM while a slow request and a webhook
// delivery are in flight: the request completes with its answer, the
// delivery is sent and recorded, the invoice the request created is
// there after a restart, and so is every delivery, each Delivered.
//
// On a cluster (make test-cluster) the signal goes to the node that runs
// the store, where the delivery is in flight, and the slow request is
// sent to that node too; the restart is that node's, rejoining the two
// others, which went on running.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cl := startServer(t, dir, "--dev", "--shutdown-timeout", "60s")
	c := cl.createStore("--name", "Drain")
	rcv := newGatedReceiver(t)
	wh := addWebhook(t, cl, c, map[string]any{"url": rcv.srv.URL + "/hook"})
	first := createInvoice(t, cl, c, map[string]any{"amount": 1000, "currency": "SATS"})
	waitFor(t, 30*time.Second, "the first delivery to reach the endpoint", func() bool { return rcv.held() == 1 })
	s := cl.nodeOf(first) // the node that stops

	// The slow request: its handler is reading the body (the server
	// answered 100 Continue) when the signal comes; the body follows.
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"amount":2000,"currency":"SATS","orderId":"in-flight"}`
	fmt.Fprintf(conn, "POST /api/v1/stores/%s/invoices HTTP/1.1\r\nHost: kassa\r\nx-api-key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		c.StoreID, c.APIKey, len(body))
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("want 100 Continue, got %q (%v)", line, err)
	}
	br.ReadString('\n') // the blank line after it

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the server to start shutting down", func() bool { return strings.Contains(s.Logs(), "shutting down") })
	close(rcv.gate) // the delivery in flight is answered
	io.WriteString(conn, body)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the request in flight got no answer: %v", err)
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var inv struct{ ID, Status string }
	if res.StatusCode != 200 || json.Unmarshal(answer, &inv) != nil || inv.ID == "" {
		t.Fatalf("the request in flight = %d: %s", res.StatusCode, answer)
	}
	<-s.done
	s.cmd.Wait()
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, s.ownLogs())
	}
	if !strings.Contains(s.ownLogs(), "shutting down: drained") || strings.Contains(cl.Logs(), "left in the outbox") {
		t.Errorf("the log does not say the drain finished in time:\n%s", cl.Logs())
	}
	rcv.mu.Lock()
	sentBeforeExit := len(rcv.delivered)
	rcv.mu.Unlock()
	if sentBeforeExit == 0 {
		t.Errorf("no delivery was answered before the process exited")
	}

	s2 := cl.restartNode(s, "--dev")
	if got := s2.json("GET", "/api/v1/stores/"+c.StoreID+"/invoices/"+inv.ID, c.APIKey, nil, 200); got["orderId"] != "in-flight" {
		t.Errorf("the invoice of the request in flight after the restart: %v", got)
	}
	// Both invoices' New deliveries: sent before the exit or from the
	// outbox after the restart, each logged Delivered.
	waitFor(t, 30*time.Second, "every delivery to be logged Delivered", func() bool {
		log := deliveryLog(t, s2, c, wh["id"].(string))
		delivered := map[string]bool{}
		for _, d := range log {
			if d["status"] == "Delivered" {
				delivered[fmt.Sprint(d["invoiceId"])] = true
			} else if d["status"] == "Failed" {
				t.Fatalf("a delivery failed: %v", d)
			}
		}
		return delivered[first] && delivered[inv.ID]
	})
}

// TestShutdownTimeoutLeavesDeliveryInOutbox sends SIGTERM while the
// endpoint holds a delivery longer than --shutdown-timeout: the process
// exits cleanly, the delivery is not recorded as failed but left in the
// outbox, and the next start sends it.
//
// On a cluster (make test-cluster) the signal goes to the node that runs
// the store, where the delivery is in flight. The next node to run the
// store is then one of the two others, which takes it over once the
// stopped node has left and sends what the store's outbox holds, before
// any restart: that node's log must show it sent the delivery left
// behind. The stopped node then rejoins, its store comes back to it, and
// its start finds nothing more to send.
func TestShutdownTimeoutLeavesDeliveryInOutbox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cl := startServer(t, dir, "--dev", "--shutdown-timeout", "1s")
	c := cl.createStore("--name", "Timeout")
	rcv := newGatedReceiver(t)
	wh := addWebhook(t, cl, c, map[string]any{"url": rcv.srv.URL + "/hook"})
	id := createInvoice(t, cl, c, map[string]any{"amount": 1000, "currency": "SATS"})
	waitFor(t, 30*time.Second, "the delivery to reach the endpoint", func() bool { return rcv.held() == 1 })
	s := cl.nodeOf(id) // the node that stops

	if code := s.sigterm(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, s.ownLogs())
	}
	left := leftInOutbox.FindStringSubmatch(s.ownLogs())
	if left == nil {
		t.Fatalf("the log does not say the delivery was left in the outbox:\n%s", s.ownLogs())
	}
	close(rcv.gate)
	sent := func(via *server) func() bool {
		return func() bool {
			log := logEntries(deliveryLog(t, via, c, wh["id"].(string)), id, "New")
			return len(log) > 0 && log[0]["status"] == "Delivered"
		}
	}

	var s2 *server
	if e2eCluster() {
		var others []*server
		for _, n := range cl.nodes() {
			if n != s {
				others = append(others, n)
			}
		}
		waitFor(t, 30*time.Second, "the delivery to be sent by the node that took the store over", sent(others[0]))
		// The node logs the delivery after it records it, so the line
		// may come a moment after the record the wait above read.
		sentBy := regexp.MustCompile(`msg="webhook delivery" webhook=\S+ delivery=` + regexp.QuoteMeta(left[1]) + ` type=New status=Delivered`)
		kassatest.Eventually(t, 10*time.Second, "another node to log sending delivery "+left[1], func() error {
			if !sentBy.MatchString(others[0].ownLogs() + others[1].ownLogs()) {
				return fmt.Errorf("no other node logged sending delivery %s:\n%s", left[1], cl.Logs())
			}
			return nil
		})
		s2 = cl.restartNode(s, "--dev")
		waitFor(t, 30*time.Second, "the restarted node's recovery", func() bool { return recoveryLine.MatchString(s2.ownLogs()) })
		if m := recoveryLine.FindStringSubmatch(s2.ownLogs()); m[1] != "0" {
			t.Errorf("the restarted node found %s deliveries pending; the node that took the store over had sent the one left:\n%s", m[1], s2.ownLogs())
		}
	} else {
		s2 = cl.restartNode(s, "--dev")
		waitFor(t, 30*time.Second, "the delivery to be sent after the restart", sent(s2))
		if m := recoveryLine.FindStringSubmatch(s2.Logs()); m == nil || m[1] != "1" {
			t.Errorf("the restart did not recover one pending delivery:\n%s", s2.Logs())
		}
	}
	if log := logEntries(deliveryLog(t, s2, c, wh["id"].(string)), id, "New"); len(log) != 1 {
		t.Errorf("log entries of the New event %v, want one, Delivered (the cut-off attempt is not recorded)", log)
	}
}

var (
	// leftInOutbox is a delivery cut off by the drain's deadline.
	leftInOutbox = regexp.MustCompile(`msg="webhook delivery left in the outbox for the next start" delivery=(\S+)`)
	// recoveryLine is a start's count of the deliveries it found in the
	// outbox.
	recoveryLine = regexp.MustCompile(`msg="fired the deadlines due soon and found the pending webhook deliveries" deadlinesClaimed=\d+ deliveries=(\d+)`)
)
