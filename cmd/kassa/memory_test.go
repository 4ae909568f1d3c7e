package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"512MiB", 512 << 20}, {"2GiB", 2 << 30}, {"2gb", 2 << 30}, {"1TiB", 1 << 40},
		{"100000000", 100000000}, {"65536KiB", 64 << 20}, {" 300 MiB ", 300 << 20}, {"67108864B", 64 << 20},
	} {
		if got, err := parseSize(tt.in); err != nil || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "MiB", "-1GiB", "0", "1.5GiB", "10MiB", "9999999999TiB", "1 PiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestApplyMemoryLimit checks where the limit comes from. It changes the
// process-wide limit, so it restores it and does not run in parallel.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	dir := t.TempDir()
	old := cgroupMemoryMax
	t.Cleanup(func() { cgroupMemoryMax = old })

	cgroupMemoryMax = filepath.Join(dir, "absent")
	check := func(spec string, want int64, wantSource string) {
		t.Helper()
		got, source, err := applyMemoryLimit(spec)
		if err != nil || got != want || source != wantSource || debug.SetMemoryLimit(-1) != want {
			t.Errorf("applyMemoryLimit(%q) = %d, %s, %v (runtime %d); want %d, %s", spec, got, source, err, debug.SetMemoryLimit(-1), want, wantSource)
		}
	}
	check("auto", 1<<30, "default")
	check("768MiB", 768<<20, "flag")
	check("off", math.MaxInt64, "off")

	cgroupMemoryMax = filepath.Join(dir, "memory.max")
	if err := os.WriteFile(cgroupMemoryMax, []byte("max\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("auto", 1<<30, "default")
	if err := os.WriteFile(cgroupMemoryMax, []byte("1000000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("auto", 900000000, "cgroup")
	check("256MiB", 256<<20, "flag") // the flag wins over the cgroup

	// GOMEMLIMIT, read by the runtime at start, is left as it is.
	debug.SetMemoryLimit(300 << 20)
	t.Setenv("GOMEMLIMIT", "300MiB")
	check("auto", 300<<20, "GOMEMLIMIT")
	check("400MiB", 400<<20, "flag")

	if _, _, err := applyMemoryLimit("lots"); err == nil {
		t.Error(`applyMemoryLimit("lots") succeeded`)
	}
}

// TestApplyGCPercent: kassa serve runs the collector at GOGC 200 unless
// the environment sets GOGC, which the runtime read at start and which
// is left as it is. It changes the process-wide setting, so it restores
// it and does not run in parallel.
func TestApplyGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	gcPercent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}

	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	if p, source := applyGCPercent(); p != 200 || source != "default" || gcPercent() != 200 {
		t.Errorf("applyGCPercent() without GOGC = %d, %s (runtime %d); want 200, default", p, source, gcPercent())
	}

	debug.SetGCPercent(150)
	t.Setenv("GOGC", "150")
	if p, source := applyGCPercent(); p != 150 || source != "GOGC" || gcPercent() != 150 {
		t.Errorf("applyGCPercent() with GOGC=150 = %d, %s (runtime %d); want 150, GOGC", p, source, gcPercent())
	}
	debug.SetGCPercent(-1)
	t.Setenv("GOGC", "off")
	if p, source := applyGCPercent(); p != -1 || source != "GOGC" || gcPercent() != -1 {
		t.Errorf("applyGCPercent() with GOGC=off = %d, %s (runtime %d); want -1, GOGC", p, source, gcPercent())
	}
}
