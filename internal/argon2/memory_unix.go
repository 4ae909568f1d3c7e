// KASSA PATCH: this file is Kassa's, not upstream's.

//go:build unix

package argon2

import (
	"syscall"
	"unsafe"
)

// allocBlocks maps n zeroed blocks from the kernel, outside the Go heap:
// kept for the next derivation, they are no garbage, and the collector,
// which paces itself by the live heap (GOGC), does not count them; a
// kassa serve at GOGC 200 would let its heap grow by twice their size.
// It returns the mapping for freeBlocks, or nil when mapping failed and
// the blocks are the heap's.
func allocBlocks(n uint32) ([]block, []byte) {
	mapped, err := syscall.Mmap(-1, 0, int(n)*blockLength*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]block, n), nil
	}
	return unsafe.Slice((*block)(unsafe.Pointer(unsafe.SliceData(mapped))), n), mapped
}

// freeBlocks gives back a mapping of allocBlocks.
func freeBlocks(mapped []byte) {
	if mapped != nil {
		syscall.Munmap(mapped)
	}
}
