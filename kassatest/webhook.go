package kassatest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/kassapay/kassa"
)

// RunWebhookClient runs the contract of kassa.WebhookClient against
// clients made by open, which must be allowed to reach a loopback http
// server (as in development): Deliver sends one POST with the body and
// headers and reports the answer, never retrying; Validate passes a 2xx,
// 401 or 403 and refuses anything else with an Invalid error; CheckURL
// refuses what is no URL.
func RunWebhookClient(t *testing.T, open func(t *testing.T) kassa.WebhookClient) {
	t.Run("Deliver", func(t *testing.T) { webhookDeliver(t, open(t)) })
	t.Run("DeliverFailure", func(t *testing.T) { webhookDeliverFailure(t, open(t)) })
	t.Run("Validate", func(t *testing.T) { webhookValidate(t, open(t)) })
	t.Run("CheckURL", func(t *testing.T) { webhookCheckURL(t, open(t)) })
}

// receiver is a webhook endpoint that answers status and records what it
// got.
type receiver struct {
	mu       sync.Mutex
	requests []received
	status   int
}

type received struct {
	method string
	header http.Header
	body   string
}

func newReceiver(t *testing.T, status int) (*receiver, string) {
	r := &receiver{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.requests = append(r.requests, received{req.Method, req.Header.Clone(), string(body)})
		r.mu.Unlock()
		w.WriteHeader(r.status)
		io.WriteString(w, "thanks")
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL + "/hook"
}

func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.requests...)
}

func webhookDeliver(t *testing.T, c kassa.WebhookClient) {
	r, url := newReceiver(t, http.StatusOK)
	headers := http.Header{"X-Service-Sig": {"sha256=abc"}, "Content-Type": {"application/json"}}
	a := c.Deliver(t.Context(), url, headers, []byte(`{"type":"Settled"}`))
	if !a.OK || a.StatusCode != 200 || a.Err != "" {
		t.Errorf("Deliver to a 200 endpoint = %+v", a)
	}
	got := r.got()
	if len(got) != 1 {
		t.Fatalf("the endpoint got %d requests, want 1", len(got))
	}
	if got[0].method != http.MethodPost || got[0].body != `{"type":"Settled"}` || got[0].header.Get("X-Service-Sig") != "sha256=abc" {
		t.Errorf("the endpoint got %+v", got[0])
	}
}

func webhookDeliverFailure(t *testing.T, c kassa.WebhookClient) {
	r, url := newReceiver(t, http.StatusInternalServerError)
	a := c.Deliver(t.Context(), url, http.Header{}, []byte(`{}`))
	if a.OK || a.StatusCode != 500 || a.Err == "" {
		t.Errorf("Deliver to a 500 endpoint = %+v, want a failure that says why", a)
	}
	if n := len(r.got()); n != 1 {
		t.Errorf("the endpoint got %d requests, want 1: Deliver never retries", n)
	}
}

func webhookValidate(t *testing.T, c kassa.WebhookClient) {
	for _, status := range []int{200, 204, 401, 403} {
		if _, url := newReceiver(t, status); c.Validate(t.Context(), url) != nil {
			t.Errorf("Validate of an endpoint answering %d: %v", status, c.Validate(t.Context(), url))
		}
	}
	for _, status := range []int{404, 500, 302} {
		_, url := newReceiver(t, status)
		err := c.Validate(t.Context(), url)
		if kassa.ErrorCode(err) != kassa.Invalid || kassa.ErrorMessage(err) == "" {
			t.Errorf("Validate of an endpoint answering %d = %v, want an Invalid error that says why", status, err)
		}
	}
}

func webhookCheckURL(t *testing.T, c kassa.WebhookClient) {
	for _, bad := range []string{"", "not a url", "ftp://shop.example/hook", "https://"} {
		if err := c.CheckURL(bad); err == nil {
			t.Errorf("CheckURL(%q) passed", bad)
		}
	}
}
