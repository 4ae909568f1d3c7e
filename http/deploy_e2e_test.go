package http_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// metricName finds the Kassa series an expression names.
var metricName = regexp.MustCompile(`\bkassa_[a-z0-9_]+`)

// TestDeployFilesNameExportedMetrics parses the Grafana dashboard and the
// Prometheus alert rules under deploy/ (promtool is not at hand, so this
// is the check) and verifies that every kassa_* series they use is one
// that a running Kassa exports, so a renamed metric cannot silently blank
// a panel or an alert.
func TestDeployFilesNameExportedMetrics(t *testing.T) {
	s := newStack(t)
	s.payOneInvoice() // histograms with labels have series once observed
	exported := map[string]bool{}
	for key := range s.scrape() {
		name, _, _ := strings.Cut(key, "{")
		exported[name] = true
	}
	histogram := func(name string) bool {
		return exported[name+"_count"] && exported[name+"_sum"]
	}
	known := func(name string) bool {
		if exported[name] {
			return true
		}
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && histogram(base) {
				return true
			}
		}
		return false
	}

	var dash struct {
		Title  string
		Panels []struct {
			Title   string
			Type    string
			Targets []struct{ Expr string }
		}
	}
	data, err := os.ReadFile("../deploy/grafana/kassa.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	exprs := map[string]string{} // expression → where
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			exprs[q.Expr] = "dashboard panel " + p.Title
		}
	}

	var rules struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert       string
				Expr        string
				For         string
				Labels      map[string]string
				Annotations map[string]string
			}
		}
	}
	data, err = os.ReadFile("../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("alert rules: %v", err)
	}
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = true
			if r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert %q lacks an expression, a severity or a summary", r.Alert)
			}
			exprs[r.Expr] = "alert " + r.Alert
		}
	}
	for _, want := range []string{"KassaChainLagging", "KassaLightningDisconnected", "KassaForwardsFailing", "KassaDiskNearlyFull", "KassaWebhookFailureRatio"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
	for expr, where := range exprs {
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: %q names no Kassa metric", where, expr)
		}
		for _, n := range names {
			if !known(n) {
				t.Errorf("%s names %s, which Kassa does not export", where, n)
			}
		}
	}
}
