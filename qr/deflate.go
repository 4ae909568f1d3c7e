package qr

import (
	"encoding/binary"
	"errors"
	"hash/adler32"
	"math/bits"
)

// The PNG's zlib stream is written here rather than by compress/zlib:
// a QR image has only four byte values in its rows (0x00, 0x0f, 0xf0 and
// 0xff: two modules of four pixels each) and each module's row of pixels
// repeats three times below itself. One dynamic-Huffman deflate block,
// the same for every image, gives those four bytes codes of 2 and 3 bits
// and says each repeat as one back-reference a pixel row up; a generic
// compressor spends most of its time searching for those matches.

// lit/length and distance code lengths of the one block (RFC 1951 3.2.7).
// Kraft sums: 2·¼ + 2·⅛ + 2·1/64 + 28·1/128 = 1 and 2·1/16 + 28·1/32 = 1,
// both complete, as inflaters require.
var deflateLitLens, deflateDistLens = func() (lit [286]uint8, dist [30]uint8) {
	lit[0x00], lit[0xff] = 2, 2
	lit[0x0f], lit[0xf0] = 3, 3
	lit[256], lit[257] = 6, 6 // end of block, length 3
	for s := 258; s < 286; s++ {
		lit[s] = 7
	}
	dist[0], dist[1] = 4, 4
	for s := 2; s < 30; s++ {
		dist[s] = 5
	}
	return
}()

// huffCode is a canonical Huffman code, its bits reversed as deflate
// writes them (least significant first).
type huffCode struct {
	bits uint16
	n    uint8
}

// canonical assigns the canonical codes of RFC 1951 3.2.2 to lens.
func canonical(lens []uint8) []huffCode {
	var count [16]int
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	var next [16]int
	code := 0
	for l := 1; l < 16; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	codes := make([]huffCode, len(lens))
	for s, l := range lens {
		if l == 0 {
			continue
		}
		c := next[l]
		next[l]++
		codes[s] = huffCode{bits: bits.Reverse16(uint16(c)) >> (16 - l), n: l}
	}
	return codes
}

var (
	deflateLit  = canonical(deflateLitLens[:])
	deflateDist = canonical(deflateDistLens[:])
)

// Lengths 3–258 and distances 1–32768 as deflate codes (RFC 1951 3.2.5).
var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// bitWriter appends bits least significant first, as deflate packs them.
type bitWriter struct {
	out []byte
	acc uint64
	n   uint
}

func (w *bitWriter) write(v uint64, n uint) {
	w.acc |= v << w.n
	w.n += n
	if w.n >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.acc))
		w.acc >>= 32
		w.n -= 32
	}
}

// flush writes the last bits, padded with zeros to a byte.
func (w *bitWriter) flush() {
	for w.n > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.n -= min(w.n, 8)
	}
	w.acc = 0
}

// deflateHeader is the block header (BFINAL, BTYPE 2, the code lengths)
// as bits, written once at start-up.
var deflateHeader = func() bitWriter {
	var w bitWriter
	w.write(1, 1) // BFINAL
	w.write(2, 2) // dynamic Huffman codes
	// The code lengths of both alphabets, run-length coded with the
	// code-length alphabet: 0–15 literally, 16 repeats the previous
	// length 3–6 times, 18 repeats zero 11–138 times.
	type clSym struct{ sym, extra, n uint8 }
	var seq []clSym
	all := append(append([]uint8{}, deflateLitLens[:]...), deflateDistLens[:]...)
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j] == all[i] {
			j++
		}
		run := j - i
		if all[i] == 0 {
			for run > 0 {
				if run < 11 {
					panic("qr: deflate header: short zero run")
				}
				k := min(run, 138)
				if rest := run - k; rest > 0 && rest < 11 {
					k = run - 11
				}
				seq = append(seq, clSym{18, uint8(k - 11), 7})
				run -= k
			}
		} else {
			seq = append(seq, clSym{all[i], 0, 0})
			run--
			for run > 0 {
				if run < 3 {
					seq = append(seq, clSym{all[i], 0, 0})
					run--
					continue
				}
				k := min(run, 6)
				if rest := run - k; rest > 0 && rest < 3 {
					k = run - 3
				}
				seq = append(seq, clSym{16, uint8(k - 3), 2})
				run -= k
			}
		}
		i = j
	}
	// Every code-length symbol used gets 3 bits: a complete code needs
	// exactly eight of them.
	var clLens [19]uint8
	used := 0
	for _, s := range seq {
		if clLens[s.sym] == 0 {
			clLens[s.sym] = 3
			used++
		}
	}
	if used != 8 {
		panic("qr: deflate header: code-length code not complete")
	}
	clCodes := canonical(clLens[:])
	order := [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
	hclen := 19
	for hclen > 4 && clLens[order[hclen-1]] == 0 {
		hclen--
	}
	w.write(uint64(len(deflateLitLens)-257), 5)
	w.write(uint64(len(deflateDistLens)-1), 5)
	w.write(uint64(hclen-4), 4)
	for _, s := range order[:hclen] {
		w.write(uint64(clLens[s]), 3)
	}
	for _, s := range seq {
		c := clCodes[s.sym]
		w.write(uint64(c.bits), uint(c.n))
		w.write(uint64(s.extra), uint(s.n))
	}
	return w
}()

// adlerMod is Adler-32's modulus.
const adlerMod = 65521

// errQRByte is a pixel byte the block has no code for: not possible
// at four pixels a module with a quiet zone of whole bytes.
var errQRByte = errors.New("qr: pixel byte outside the PNG coder's alphabet")

// byteClass numbers the four byte values of a row 0–3 (0xff: none of
// them), and quadCodes holds the codes of four such bytes in a row,
// indexed by their classes, so that a line costs one write per 4 bytes.
var byteClass, quadCodes = func() (class [256]uint8, quad [256]struct {
	bits uint32
	n    uint8
}) {
	for i := range class {
		class[i] = 0xff
	}
	values := [4]byte{0x00, 0x0f, 0xf0, 0xff}
	for c, v := range values {
		class[v] = uint8(c)
	}
	for q := range quad {
		for k := range 4 {
			c := deflateLit[values[q>>(6-2*k)&3]]
			quad[q].bits |= uint32(c.bits) << quad[q].n
			quad[q].n += c.n
		}
	}
	return
}()

// zlibRows writes the zlib stream of an image's filtered pixel lines,
// given once per module row with how often each repeats.
type zlibRows struct {
	w      bitWriter
	s1, s2 uint32 // Adler-32 of the lines so far
	prev   []byte
	// copies[k] are the back-references that repeat a line of n bytes
	// k times, made once per image (every line has the same length).
	n      int
	copies [qrScale + 1][]matchCode
}

// matchCode is one back-reference as deflate bits.
type matchCode struct {
	bits uint32
	n    uint8
}

// start begins the stream, appended to out.
func (z *zlibRows) start(out []byte) {
	copies := z.copies
	for i := range copies {
		copies[i] = copies[i][:0]
	}
	*z = zlibRows{w: deflateHeader, s1: 1, copies: copies, n: -1}
	z.w.out = append(append(out, 0x78, 0x01), deflateHeader.out...)
}

// line writes line, then repeat-1 copies of it (repeat at most qrScale).
// The line's bytes must stay unchanged until the next call (it may
// refer to them), and every line of an image has the same length.
func (z *zlibRows) line(line []byte, repeat int) error {
	n := len(line)
	if z.n != n {
		z.n = n
		for k := range z.copies {
			z.copies[k] = z.copies[k][:0]
		}
	}
	copies := repeat // each a copy of the line above
	if z.prev == nil || string(z.prev) != string(line) {
		i := 0
		for ; i+4 <= n; i += 4 {
			c0, c1, c2, c3 := byteClass[line[i]], byteClass[line[i+1]], byteClass[line[i+2]], byteClass[line[i+3]]
			if c0|c1|c2|c3 > 3 {
				return errQRByte
			}
			q := quadCodes[c0<<6|c1<<4|c2<<2|c3]
			z.w.write(uint64(q.bits), uint(q.n))
		}
		for ; i < n; i++ {
			c := deflateLit[line[i]]
			if c.n == 0 {
				return errQRByte
			}
			z.w.write(uint64(c.bits), uint(c.n))
		}
		copies--
	}
	if copies > 0 {
		run := z.copies[copies]
		if len(run) == 0 {
			// One back-reference of n bytes per copy, at distance n,
			// in pieces of at most 258 bytes (none under 3).
			for left := copies * n; left > 0; {
				k := min(left, 258)
				if rest := left - k; rest > 0 && rest < 3 {
					k = left - 3
				}
				run = append(run, matchOf(k, n))
				left -= k
			}
			z.copies[copies] = run
		}
		for _, m := range run {
			z.w.write(uint64(m.bits), uint(m.n))
		}
	}
	// Adler-32 of repeat lines: with S the sum of the line's bytes and
	// T = Σ (n-i)·b[i], each line adds S to s1 and n·s1 + T to s2.
	a := adler32.Checksum(line)
	S := (a&0xffff + adlerMod - 1) % adlerMod
	T := (a>>16 + adlerMod - uint32(n%adlerMod)) % adlerMod
	for range repeat {
		z.s2 = (z.s2 + uint32(n%adlerMod)*z.s1 + T) % adlerMod
		z.s1 = (z.s1 + S) % adlerMod
	}
	z.prev = line
	return nil
}

// matchOf codes a back-reference of length bytes at distance dist.
func matchOf(length, dist int) matchCode {
	var m matchCode
	add := func(v uint32, n uint8) {
		m.bits |= v << m.n
		m.n += n
	}
	l := lengthSymbol(length)
	c := deflateLit[257+l]
	add(uint32(c.bits), c.n)
	add(uint32(length-int(lengthBase[l])), lengthExtra[l])
	d := distSymbol(dist)
	c = deflateDist[d]
	add(uint32(c.bits), c.n)
	add(uint32(dist-int(distBase[d])), distExtra[d])
	return m
}

func lengthSymbol(length int) int {
	i := len(lengthBase) - 1
	for int(lengthBase[i]) > length {
		i--
	}
	return i
}

func distSymbol(dist int) int {
	i := len(distBase) - 1
	for int(distBase[i]) > dist {
		i--
	}
	return i
}

// finish ends the block and the stream and returns it.
func (z *zlibRows) finish() []byte {
	c := deflateLit[256]
	z.w.write(uint64(c.bits), uint(c.n))
	z.w.flush()
	return binary.BigEndian.AppendUint32(z.w.out, z.s2<<16|z.s1)
}
