//go:build unix

package argon2

import (
	"runtime"
	"testing"
)

// TestMemoryOutsideTheHeap: a Memory's blocks are mapped outside the Go
// heap, so that the collector, pacing itself by the live heap, does not
// let the heap grow by twice what is kept for the next derivation.
// With make, the derivation's 4 MiB was the heap's.
func TestMemoryOutsideTheHeap(t *testing.T) {
	var m Memory
	defer m.Free()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	IDKeyIn(&m, []byte("password"), []byte("saltsaltsaltsalt"), 1, 4<<10, 1, 32)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got >= 1<<20 || m.mapped == nil {
		t.Errorf("a 4 MiB derivation allocated %d KiB on the heap (mapped %v)", got>>10, m.mapped != nil)
	}
}
