//go:build itest

package itest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest/harness"
)

// fileSpan is a line of --trace-file.
type fileSpan struct {
	TraceID    string         `json:"traceId"`
	SpanID     string         `json:"spanId"`
	ParentID   string         `json:"parentSpanId"`
	Name       string         `json:"name"`
	Attributes map[string]any `json:"attributes"`
	Links      []struct {
		TraceID string `json:"traceId"`
		SpanID  string `json:"spanId"`
	} `json:"links"`
}

func (s fileSpan) attr(key string) string {
	v, _ := s.Attributes[key].(string)
	return v
}

// TestInvoiceTraceOnLnd follows one invoice paid on real lnd in the spans
// Kassa writes with --trace-file: the settle's trace runs from the
// Lightning event through the invoice actor and its Pebble commit to the
// webhook delivery of Settled (linked to the creation, whose trace starts
// at the create request's HTTP span) and to the forward of the money to
// the merchant's Lightning address.
func TestInvoiceTraceOnLnd(t *testing.T) {
	e := newLNEnv(t)
	e.kassa.Stop()
	spansFile := filepath.Join(t.TempDir(), "spans.jsonl")
	e.kassa = harness.StartKassa(t, e.kassa.Data, append(e.args[:len(e.args):len(e.args)], "--trace-file", spansFile)...)

	inv := e.createInvoice(20_000)
	if _, err := e.customer.Pay(inv.LightningInvoice, 60*time.Second); err != nil {
		t.Fatalf("customer pays: %v", err)
	}
	e.hooks.Wait(inv.ID, "Settled")
	e.waitForwarded(inv.ID, 20_000)
	e.kassa.Stop() // flushes the spans

	f, err := os.Open(spansFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byID := map[string]fileSpan{}
	var all []fileSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s fileSpan
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("span line %q: %v", sc.Text(), err)
		}
		byID[s.SpanID] = s
		all = append(all, s)
	}
	path := func(s fileSpan) []string {
		var names []string
		for {
			names = append(names, s.Name)
			p, ok := byID[s.ParentID]
			if s.ParentID == "" || !ok {
				break
			}
			if p.TraceID != s.TraceID {
				t.Errorf("%s's parent is in another trace", s.Name)
			}
			s = p
		}
		slices.Reverse(names)
		return names
	}
	var settled, forward fileSpan
	for _, s := range all {
		if s.Name == "webhook.Deliver" && s.attr("invoice.id") == inv.ID && s.attr("event.type") == "Settled" {
			settled = s
		}
	}
	if settled.SpanID == "" {
		t.Fatalf("no delivery span of the Settled event among %d spans", len(all))
	}
	if got, want := path(settled), []string{"actors.HandleLightningEvent", "invoice.Apply", "webhook.Deliver"}; !slices.Equal(got, want) {
		t.Errorf("settle's delivery: trace path %v, want %v", got, want)
	}
	apply := byID[settled.ParentID]
	var commits int
	for _, s := range all {
		switch {
		case s.Name == "pebble.Commit" && s.ParentID == apply.SpanID:
			commits++
		case s.Name == "forward.Step" && s.ParentID == apply.SpanID && s.attr("forward.id") != "":
			forward = s
		}
	}
	if commits != 1 {
		t.Errorf("%d commits under the settle's invoice.Apply, want 1", commits)
	}
	if forward.SpanID == "" {
		t.Error("no forward.Step span under the settle's invoice.Apply")
	}
	if len(settled.Links) != 1 {
		t.Fatalf("settle's delivery links %v, want the invoice's creation", settled.Links)
	}
	create, ok := byID[settled.Links[0].SpanID]
	if !ok || create.Name != "invoice.Create" || create.attr("invoice.id") != inv.ID {
		t.Fatalf("the link points at %+v, want the invoice's invoice.Create", create)
	}
	if got, want := path(create), []string{"POST /api/v1/stores/{storeId}/invoices", "actors.CreateInvoice", "invoice.Create"}; !slices.Equal(got, want) {
		t.Errorf("creation: trace path %v, want %v", got, want)
	}
}
