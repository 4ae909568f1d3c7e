package main

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// defaultMemoryLimit is the soft memory limit when neither --memory-limit
// nor GOMEMLIMIT nor a cgroup limit says otherwise.
const defaultMemoryLimit = 1 << 30

// cgroupMemoryMax is where cgroup v2 publishes a container's memory limit.
var cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// applyMemoryLimit sets the Go runtime's soft memory limit and returns it
// (math.MaxInt64: none) and where it came from. spec is --memory-limit:
// "auto" honours GOMEMLIMIT when it is set, else takes 90% of the cgroup
// limit when there is one, else 1 GiB; "off" sets none; otherwise a size
// like 512MiB or 2GiB (GOMEMLIMIT's syntax; also plain bytes). The limit,
// not GOGC (applyGCPercent), bounds how far the heap may grow.
func applyMemoryLimit(spec string) (int64, string, error) {
	var limit int64
	var source string
	switch strings.TrimSpace(strings.ToLower(spec)) {
	case "", "auto":
		if env := os.Getenv("GOMEMLIMIT"); env != "" {
			// The runtime read it at start.
			return debug.SetMemoryLimit(-1), "GOMEMLIMIT", nil
		}
		limit, source = defaultMemoryLimit, "default"
		if max, ok := cgroupLimit(); ok {
			limit, source = max/10*9, "cgroup"
		}
	case "off":
		limit, source = math.MaxInt64, "off"
	default:
		n, err := parseSize(spec)
		if err != nil {
			return 0, "", fmt.Errorf("--memory-limit %q: %w", spec, err)
		}
		limit, source = n, "flag"
	}
	debug.SetMemoryLimit(limit)
	return limit, source, nil
}

// defaultGCPercent is GOGC unless the environment sets one: the heap may
// grow to three times what is live between collections instead of
// twice, within the soft memory limit. Collections halve, and with them
// about half of the 5% of a create's CPU they took (docs/decisions.md,
// "Performance choices").
const defaultGCPercent = 200

// applyGCPercent sets the collector's GOGC to defaultGCPercent unless the
// environment sets GOGC, which the runtime read at start and which is
// left as it is. It returns the setting in force (-1: off) and where it
// came from.
func applyGCPercent() (int, string) {
	if os.Getenv("GOGC") != "" {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p, "GOGC"
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent, "default"
}

// cgroupLimit reads the cgroup v2 memory limit, if one is set.
func cgroupLimit() (int64, bool) {
	b, err := os.ReadFile(cgroupMemoryMax)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0, false // "max": no limit
	}
	return n, true
}

// parseSize reads a byte count with an optional unit: B, KiB, MiB, GiB,
// TiB (as GOMEMLIMIT spells them) or KB, MB, GB, TB (taken as the same
// powers of two, which is what people mean here).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		scale  int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40},
		{"B", 1},
	}
	scale := int64(1)
	for _, u := range units {
		if len(s) > len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			s, scale = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.scale
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("use a positive size such as 512MiB or 2GiB, or off")
	}
	if n > math.MaxInt64/scale {
		return 0, fmt.Errorf("size too large")
	}
	if n*scale < 64<<20 {
		return 0, fmt.Errorf("at least 64MiB: below that the collector runs without pause")
	}
	return n * scale, nil
}
