package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest/harness"
)

// TestDebugListenerFreesOSMemoryOnlyInDev checks the debug listener's
// POST /debug/free-os-memory, which kassa-bench calls before it reads
// the resident set: there with --dev (and only as a POST), absent
// without it, where the listener serves pprof alone.
func TestDebugListenerFreesOSMemoryOnlyInDev(t *testing.T) {
	for _, dev := range []bool{true, false} {
		debugAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
		flags := []string{"--debug-listen", debugAddr}
		if dev {
			flags = append(flags, "--dev")
		}
		startServer(t, t.TempDir(), flags...)
		base := "http://" + debugAddr
		// Positive control: the listener is up and serves pprof.
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err := http.Get(base + "/debug/pprof/")
			if err == nil {
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					t.Fatalf("dev %v: pprof index: %s", dev, res.Status)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("dev %v: debug listener did not answer: %v", dev, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		res, err := http.Post(base+"/debug/free-os-memory", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if want := map[bool]int{true: http.StatusNoContent, false: http.StatusNotFound}[dev]; res.StatusCode != want {
			t.Fatalf("dev %v: POST free-os-memory: %d, want %d", dev, res.StatusCode, want)
		}
		if dev {
			res, err := http.Get(base + "/debug/free-os-memory")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusMethodNotAllowed {
				t.Fatalf("GET free-os-memory: %d, want 405", res.StatusCode)
			}
		}
	}
}
