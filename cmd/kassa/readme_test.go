package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// walkthroughMarker is the comment in README.md above the block that
// TestREADMEWalkthrough runs.
const walkthroughMarker = "<!-- walkthrough:"

// readmeWalkthrough returns the first fenced block after the walkthrough
// marker in README.md.
func readmeWalkthrough(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), walkthroughMarker)
	if !ok {
		t.Fatalf("README.md has no %q marker above its walkthrough", walkthroughMarker)
	}
	m := regexp.MustCompile("(?s)\n```(?:sh|bash)\n(.*?)\n```").FindStringSubmatch(after)
	if m == nil {
		t.Fatal("README.md has no fenced sh block after the walkthrough marker")
	}
	return m[1]
}

// demoExports waits for the export lines `serve --dev` prints and returns
// them, and the demo store id they set.
func demoExports(t *testing.T, s *server) (lines, store string) {
	t.Helper()
	storeLine := regexp.MustCompile(`(?m)^export STORE=(\S+) KEY=\S+$`)
	waitFor(t, 30*time.Second, "the demo store's export lines", func() bool { return storeLine.MatchString(s.Stdout()) })
	var exports []string
	for _, line := range strings.Split(s.Stdout(), "\n") {
		if strings.HasPrefix(line, "export ") {
			exports = append(exports, line)
		}
	}
	return strings.Join(exports, "\n"), storeLine.FindStringSubmatch(s.Stdout())[1]
}

// TestREADMEWalkthrough pastes what `make run` prints and then the
// README's walkthrough into bash, as a reader would, against the real
// binary: every command must succeed, and both invoices end Settled.
func TestREADMEWalkthrough(t *testing.T) {
	needBinary(t)
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README walkthrough needs %s (%v): run `make test-deps` (scripts/install-test-deps.sh) to install it", tool, err)
		}
	}
	walkthrough := readmeWalkthrough(t)
	s := startServer(t, t.TempDir(), "--dev")
	exports, store := demoExports(t, s)
	if want := "Dashboard: " + s.url + "/dashboard"; !strings.Contains(s.Stdout(), want) {
		t.Errorf("make run does not say where the dashboard is (%q):\n%s", want, s.Stdout())
	}
	if !strings.Contains(exports, "KASSA_SERVER=") || !strings.Contains(exports, "KASSA_DATA=") {
		t.Fatalf("serve --dev printed no KASSA_SERVER and KASSA_DATA exports:\n%s", s.Stdout())
	}

	// The reader's shell: in the repository, where make run built bin/kassa.
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binPath, filepath.Join(work, "bin", "kassa")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(work, "walkthrough.sh")
	if err := os.WriteFile(script, []byte(exports+"\n"+walkthrough+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-e", "-u", "-o", "pipefail", script)
	cmd.Dir = work
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KASSA_") && !strings.HasPrefix(kv, "STORE=") && !strings.HasPrefix(kv, "KEY=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GORACE=atexit_sleep_ms=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README walkthrough failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("walkthrough output:\n%s", stdout.String())

	// Two invoices of the demo store, one paid over Lightning, one on-chain,
	// both Settled, each with its transfer.
	key := regexp.MustCompile(`(?m)^export STORE=\S+ KEY=(\S+)$`).FindStringSubmatch(exports)[1]
	base := "/api/v1/stores/" + store
	var invoices []map[string]any
	waitFor(t, 30*time.Second, "both walkthrough invoices to settle", func() bool {
		invoices = s.list(base+"/invoices", key)
		settled := 0
		for _, inv := range invoices {
			if inv["status"] == "Settled" {
				settled++
			}
		}
		return len(invoices) == 2 && settled == 2
	})
	transfers := map[string]bool{}
	for _, tx := range s.list(base+"/transactions", key) {
		if tx["type"] == "transfer" {
			transfers[tx["invoiceId"].(string)] = true
		}
	}
	for _, inv := range invoices {
		if !transfers[inv["id"].(string)] {
			t.Errorf("invoice %v has no transfer transaction", inv["id"])
		}
	}
	if got := strings.Count(stdout.String(), "Settled"); got < 2 {
		t.Errorf("the walkthrough printed Settled %d times, want at least 2 (both invoices):\n%s", got, stdout.String())
	}
}

// readmeSection returns the text of README.md's "## title…" section.
func readmeSection(t *testing.T, readme, title string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n## "+title)
	if !ok {
		t.Fatalf("README.md has no section %q", title)
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		after = after[:i]
	}
	return after
}

// TestREADMECommandsPaste: the commands the README has a reader type in
// the repository after `make run` name bin/kassa, the binary it builds
// (a bare `kassa` is not on the PATH there), and Deploying names the
// command that makes the first operator.
func TestREADMECommandsPaste(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	bare := regexp.MustCompile("(?m)(?:`|^)kassa (store|sim|user|backup|restore|version|health|config)\\b")
	for _, title := range []string{"Set-up", "Configuring", "Dashboard"} {
		for _, m := range bare.FindAllString(readmeSection(t, readme, title), -1) {
			t.Errorf("section %q has %q: in the repository the command is bin/kassa", title, m)
		}
	}
	if deploying := readmeSection(t, readme, "Deploying"); !strings.Contains(deploying, "kassa user create --admin") {
		t.Error("Deploying does not say how to make the first operator (kassa user create --admin)")
	}
}
