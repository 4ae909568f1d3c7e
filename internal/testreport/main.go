// Command testreport reads the JSON stream of go test -json on its
// standard input and prints what a person reading CI's log needs: a
// line per package as go test prints it, the whole output of each test
// that failed and of each package that failed (a panic, a timeout, a
// build error), and one line per skipped test with the reason it gave,
// which go test without -v never shows. It exits 1 when anything failed
// or a skipped test gave no reason, so a pipeline under pipefail keeps
// go test's verdict and adds its own.
//
//	go test -json ./... | go run ./internal/testreport
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(report(os.Stdin, os.Stdout))
}

// event is one line of go test -json (cmd/test2json's TestEvent and the
// build's BuildEvent, told apart by Action).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// key names one test of one package; Test is empty for the package.
type key struct{ pkg, test string }

// reporter holds the output of each test and package that has not ended.
type reporter struct {
	out      io.Writer
	pending  map[key][]string
	failed   bool
	skipped  int
	noReason int
}

// report reads the stream from in, writes the report to out and returns
// the exit status.
func report(in io.Reader, out io.Writer) int {
	r := &reporter{out: out, pending: map[key][]string{}}
	br := bufio.NewReader(in)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			r.line(line)
		}
		if err != nil {
			break
		}
	}
	// Whatever never ended (the stream was cut) is shown as it is.
	for k, lines := range r.pending {
		fmt.Fprintf(out, "--- %s %s did not end:\n%s", k.pkg, k.test, strings.Join(lines, ""))
		r.failed = true
	}
	if r.skipped > 0 {
		fmt.Fprintf(out, "%d tests skipped, each with its reason above\n", r.skipped)
	}
	if r.noReason > 0 {
		fmt.Fprintf(out, "FAIL: %d skipped tests gave no reason\n", r.noReason)
		r.failed = true
	}
	if r.failed {
		return 1
	}
	return 0
}

// line handles one line of the stream.
func (r *reporter) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
		// go test writes some errors (a bad flag, no packages) as text.
		fmt.Fprint(r.out, line)
		return
	}
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
		return
	case "build-fail":
		r.failed = true
		return
	}
	k := key{e.Package, e.Test}
	switch e.Action {
	case "output":
		r.pending[k] = append(r.pending[k], e.Output)
	case "pass", "bench":
		if e.Test == "" {
			r.packageLine(k, "ok")
		}
		delete(r.pending, k)
	case "skip":
		if e.Test == "" {
			r.packageLine(k, "?")
		} else {
			r.skip(k)
		}
		delete(r.pending, k)
	case "fail":
		r.failed = true
		if e.Test == "" {
			// A test still running when its package failed (a panic,
			// a timeout) has its output shown first.
			for o, lines := range r.pending {
				if o.pkg == k.pkg && o.test != "" {
					fmt.Fprint(r.out, strings.Join(lines, ""))
					delete(r.pending, o)
				}
			}
		}
		fmt.Fprint(r.out, strings.Join(r.pending[k], ""))
		delete(r.pending, k)
	}
}

// packageLine prints the line go test prints for a package that passed
// ("ok") or has no tests ("?").
func (r *reporter) packageLine(k key, prefix string) {
	for _, l := range r.pending[k] {
		if strings.HasPrefix(l, prefix+" ") {
			fmt.Fprint(r.out, l)
			return
		}
	}
}

// skip prints one line for a skipped test: its name and its reason.
func (r *reporter) skip(k key) {
	r.skipped++
	var reason []string
	for _, l := range r.pending[k] {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		reason = append(reason, l)
	}
	if len(reason) == 0 {
		r.noReason++
		reason = []string{"(no reason given)"}
	}
	fmt.Fprintf(r.out, "SKIP %s %s: %s\n", k.pkg, k.test, strings.Join(reason, " "))
}
