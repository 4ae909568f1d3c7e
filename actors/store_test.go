package actors

import "testing"

// TestCompactRebuildsShrunkMaps checks that a map that fell below a
// quarter of its peak is replaced by a fresh copy with the same entries,
// and that a small or still full map is kept.
func TestCompactRebuildsShrunkMaps(t *testing.T) {
	m := map[int]int{}
	peak := 0
	for i := range 4096 {
		m[i] = i
		peak = max(peak, len(m))
	}
	kept := compact(m, &peak)
	kept[-1] = -1 // the same map: visible through m
	if m[-1] != -1 || peak != 4096 {
		t.Fatalf("a full map was replaced (peak %d)", peak)
	}
	delete(m, -1)
	for i := range 4000 {
		delete(m, i)
	}
	fresh := compact(m, &peak)
	fresh[-2] = -2
	if _, shared := m[-2]; shared {
		t.Fatal("a map at a fortieth of its peak was kept")
	}
	if len(fresh) != 97 || fresh[4095] != 4095 || peak != 96 {
		t.Fatalf("copy has %d entries, peak %d", len(fresh), peak)
	}
	small := map[int]int{1: 1}
	smallPeak := 10
	if compact(small, &smallPeak)[1] != 1 || smallPeak != 10 {
		t.Fatal("a small map was rebuilt")
	}
}
