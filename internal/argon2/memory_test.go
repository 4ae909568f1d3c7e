package argon2

import (
	"bytes"
	"testing"
)

// TestIDKeyInMatchesIDKey: one Memory reused across passwords, salts,
// sizes and lanes derives what IDKey derives in fresh memory, and is all
// zeros after each derivation. Without the clearing, the second
// derivation in the same Memory differs (processBlocks XORs into it).
func TestIDKeyInMatchesIDKey(t *testing.T) {
	var m Memory
	cases := []struct {
		password, salt string
		time, memory   uint32
		threads        uint8
	}{
		{"correct horse battery", "0123456789abcdef", 2, 64, 1},
		{"wrong password guess", "fedcba9876543210", 2, 64, 1},
		{"correct horse battery", "0123456789abcdef", 2, 64, 1},
		{"another", "saltsaltsaltsalt", 1, 256, 2},
		{"smaller after larger", "saltsaltsaltsalt", 3, 32, 1},
		{"four lanes", "saltsaltsaltsalt", 1, 100, 4},
	}
	for _, c := range cases {
		want := IDKey([]byte(c.password), []byte(c.salt), c.time, c.memory, c.threads, 32)
		got := IDKeyIn(&m, []byte(c.password), []byte(c.salt), c.time, c.memory, c.threads, 32)
		if !bytes.Equal(got, want) {
			t.Errorf("%+v: IDKeyIn %x, IDKey %x", c, got, want)
		}
		for i, b := range m.blocks {
			if b != (block{}) {
				t.Fatalf("%+v: block %d of the Memory not cleared", c, i)
			}
		}
	}
	if m.Size() != 256*1024 {
		t.Errorf("Memory holds %d bytes, want the largest asked, 256 KiB", m.Size())
	}
	m.Free()
	if got := IDKeyIn(&m, []byte("after Free"), []byte("saltsaltsaltsalt"), 2, 64, 1, 32); !bytes.Equal(got, IDKey([]byte("after Free"), []byte("saltsaltsaltsalt"), 2, 64, 1, 32)) {
		t.Error("IDKeyIn after Free differs from IDKey")
	}
	m.Free()
	if got := IDKeyIn(nil, []byte("x"), []byte("saltsaltsaltsalt"), 1, 64, 1, 32); !bytes.Equal(got, IDKey([]byte("x"), []byte("saltsaltsaltsalt"), 1, 64, 1, 32)) {
		t.Error("IDKeyIn(nil) differs from IDKey")
	}
}
