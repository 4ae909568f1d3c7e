package kassa

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// A small reader of Pebble datadriven style scripts: each case is a
// command line, a line "----" and the expected output up to the next
// blank line. Lines starting with # between cases are comments.
//
//	pay onchain id=a amount=600 conf=1
//	----
//	New None paid=600 confirmed=600
//
// go test -run TestInvoiceScripts -rewrite writes the actual output into
// the files instead of comparing; review the diff before keeping it.

var rewriteScripts = flag.Bool("rewrite", false, "rewrite the expected output of testdata scripts")

// scriptCommand is one command of a script.
type scriptCommand struct {
	Pos  string   // file:line
	Name string   // first word
	Args []string // further words without '='
	KV   map[string]string
	used map[string]bool
}

// Has reports whether key was given, and marks it used.
func (c *scriptCommand) Has(key string) bool {
	_, ok := c.KV[key]
	c.used[key] = true
	return ok
}

// Get returns the value of key, or def when absent.
func (c *scriptCommand) Get(key, def string) string {
	c.used[key] = true
	if v, ok := c.KV[key]; ok {
		return v
	}
	return def
}

// unused lists the keys that no Get or Has asked for: typos.
func (c *scriptCommand) unused() []string {
	var keys []string
	for k := range c.KV {
		if !c.used[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

type scriptCase struct {
	cmd            scriptCommand
	expected       string
	outStart, outN int // lines of the expected output in the file
}

func parseScript(t *testing.T, path string) ([]string, []scriptCase) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var cases []scriptCase
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pos := fmt.Sprintf("%s:%d", filepath.Base(path), i+1)
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s: command %q is not followed by ----", pos, line)
		}
		fields := strings.Fields(line)
		c := scriptCase{cmd: scriptCommand{Pos: pos, Name: fields[0], KV: map[string]string{}, used: map[string]bool{}}}
		for _, f := range fields[1:] {
			if k, v, ok := strings.Cut(f, "="); ok {
				c.cmd.KV[k] = v
			} else {
				c.cmd.Args = append(c.cmd.Args, f)
			}
		}
		c.outStart = i + 2
		j := c.outStart
		for j < len(lines) && strings.TrimSpace(lines[j]) != "" {
			j++
		}
		c.outN = j - c.outStart
		c.expected = strings.Join(lines[c.outStart:j], "\n")
		cases = append(cases, c)
		i = j
	}
	return lines, cases
}

// runScript runs every case of the script at path through run, which
// returns the output of one command, and compares it with the expected
// output, or rewrites the file with -rewrite.
func runScript(t *testing.T, path string, run func(c *scriptCommand) string) {
	t.Helper()
	lines, cases := parseScript(t, path)
	outputs := make([]string, len(cases))
	for i := range cases {
		c := &cases[i]
		out := strings.TrimRight(run(&c.cmd), "\n")
		if unused := c.cmd.unused(); len(unused) > 0 {
			t.Fatalf("%s: %s does not take %v", c.cmd.Pos, c.cmd.Name, unused)
		}
		outputs[i] = out
		if !*rewriteScripts && out != c.expected {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", c.cmd.Pos, lines[c.outStart-2], indent(out), indent(c.expected))
		}
	}
	if !*rewriteScripts {
		return
	}
	var b strings.Builder
	next := 0
	for i, c := range cases {
		for _, l := range lines[next:c.outStart] {
			b.WriteString(l + "\n")
		}
		if outputs[i] != "" {
			b.WriteString(outputs[i] + "\n")
		}
		next = c.outStart + c.outN
	}
	for _, l := range lines[next:] {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
