// KASSA PATCH: this file is Kassa's, not upstream's.

//go:build !unix

package argon2

// allocBlocks makes n blocks on the heap: the kernel's mapping is for
// unix (memory_unix.go).
func allocBlocks(n uint32) ([]block, []byte) { return make([]block, n), nil }

// freeBlocks has nothing to give back.
func freeBlocks([]byte) {}
