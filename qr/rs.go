package qr

import (
	"encoding/binary"
	"sync"

	"rsc.io/qr/coding"
)

// rsTable is QR's Reed-Solomon code with c check bytes (generator
// polynomial Π (x − αⁱ), i < c, over coding.Field) as a table: for each
// feedback byte, the generator's lower coefficients multiplied by it,
// packed big-endian in four words (c is at most 30). A data byte then
// costs a shift and an XOR of four words, where gf256.RSEncoder
// multiplies through logarithms.
type rsTable struct {
	c   int
	mul [256][4]uint64 // byte j of mul[f] (from the top) = f · g[j+1]
}

var rsTables sync.Map // check bytes → *rsTable

func rsTableOf(c int) *rsTable {
	if c > 32 {
		panic("qr: more than 32 check bytes a block")
	}
	if t, ok := rsTables.Load(c); ok {
		return t.(*rsTable)
	}
	f := coding.Field
	// g[0] is the highest coefficient, always 1.
	g := []byte{1}
	for i := range c {
		a := f.Exp(i)
		next := make([]byte, len(g)+1)
		for j, coef := range g {
			next[j] ^= coef             // · x
			next[j+1] ^= f.Mul(coef, a) // · αⁱ
		}
		g = next
	}
	t := &rsTable{c: c}
	for fb := range 256 {
		for j := range c {
			t.mul[fb][j/8] |= uint64(f.Mul(byte(fb), g[j+1])) << (56 - 8*(j%8))
		}
	}
	v, _ := rsTables.LoadOrStore(c, t)
	return v.(*rsTable)
}

// appendECC appends the c check bytes of data to msg: the remainder of
// data·xᶜ divided by the generator, kept as 32 bytes in four words.
func (t *rsTable) appendECC(msg, data []byte) []byte {
	var r0, r1, r2, r3 uint64
	for _, d := range data {
		row := &t.mul[d^byte(r0>>56)]
		r0 = (r0<<8 | r1>>56) ^ row[0]
		r1 = (r1<<8 | r2>>56) ^ row[1]
		r2 = (r2<<8 | r3>>56) ^ row[2]
		r3 = r3<<8 ^ row[3]
	}
	var buf [32]byte
	binary.BigEndian.PutUint64(buf[0:], r0)
	binary.BigEndian.PutUint64(buf[8:], r1)
	binary.BigEndian.PutUint64(buf[16:], r2)
	binary.BigEndian.PutUint64(buf[24:], r3)
	return append(msg, buf[:t.c]...)
}
