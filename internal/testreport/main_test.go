package main

import (
	"os"
	"strings"
	"testing"
)

// The streams in testdata are go test -json's own, of a small module
// whose tests pass, skip with and without a reason, fail, panic and do
// not build.

func run(t *testing.T, file string) (string, int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	status := report(f, &out)
	return out.String(), status
}

func TestPassingRunPrintsPackagesAndSkipReasons(t *testing.T) {
	out, status := run(t, "testdata/passing.json")
	if status != 0 {
		t.Errorf("status %d, want 0; report:\n%s", status, out)
	}
	for _, want := range []string{
		"ok  \texample.com/tr/a\t",
		"?   \texample.com/tr/c\t[no test files]\n",
		"SKIP example.com/tr/a TestSkip: a_test.go:4: needs a daemon\n",
		"1 tests skipped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "noise") || strings.Contains(out, "=== RUN") {
		t.Errorf("report shows a passing test's output:\n%s", out)
	}
}

func TestFailuresShownWhole(t *testing.T) {
	out, status := run(t, "testdata/mixed.json")
	if status != 1 {
		t.Errorf("status %d, want 1", status)
	}
	for _, want := range []string{
		// a failed test, with its log
		"    a_test.go:6: before\n    a_test.go:6: boom\n--- FAIL: TestFail",
		"FAIL\texample.com/tr/a\t",
		// a panic, with its stack
		"panic: oops",
		"b_test.go:4",
		"FAIL\texample.com/tr/b\t",
		// a build error
		`d/d_test.go:2:23: cannot use "s"`,
		"FAIL\texample.com/tr/d [build failed]",
		// a skipped subtest, and a skip without a reason
		"SKIP example.com/tr/a TestSub/one: a_test.go:5: sub reason\n",
		"SKIP example.com/tr/b TestSilent: (no reason given)\n",
		"FAIL: 1 skipped tests gave no reason",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "noise") {
		t.Errorf("report shows a passing test's output:\n%s", out)
	}
}

func TestSilentSkipFailsTheRun(t *testing.T) {
	in := `{"Action":"run","Package":"p","Test":"TestX"}
{"Action":"output","Package":"p","Test":"TestX","Output":"=== RUN   TestX\n"}
{"Action":"output","Package":"p","Test":"TestX","Output":"--- SKIP: TestX (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestX"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`
	var out strings.Builder
	if status := report(strings.NewReader(in), &out); status != 1 {
		t.Errorf("status %d, want 1:\n%s", status, out.String())
	}
}

func TestCutStreamFails(t *testing.T) {
	in := `{"Action":"run","Package":"p","Test":"TestX"}
{"Action":"output","Package":"p","Test":"TestX","Output":"=== RUN   TestX\n"}
go: some error written as text
`
	var out strings.Builder
	status := report(strings.NewReader(in), &out)
	if status != 1 {
		t.Errorf("status %d, want 1", status)
	}
	for _, want := range []string{"go: some error written as text\n", "p TestX did not end", "=== RUN   TestX"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
