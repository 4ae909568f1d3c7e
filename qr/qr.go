package qr

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"sync"

	"rsc.io/qr/coding"
)

// qrScale is the number of pixels per QR module. Pages scale the image up
// with CSS (image-rendering: pixelated), so it stays small.
const qrScale = 4

// drawPNG's nibble table assumes 4 pixels a module: this fails to compile
// otherwise.
const _ = uint(qrScale-4) + uint(4-qrScale)

// qrLevel is the error-correction level of every QR code: M, which wallet
// cameras read well off a screen.
const qrLevel = coding.M

// qrQuietZone is the blank border around a code, in modules (the
// standard asks for four).
const qrQuietZone = 4

// Codes are the two QR images of an invoice, as PNG data URIs.
type Codes struct {
	Lightning string // the BOLT11 invoice
	Bitcoin   string // the BIP21 URI
}

// LightningContent is what the Lightning QR code encodes: the URI in upper
// case (schemes are case-insensitive), which QR codes store in their
// denser alphanumeric mode.
func LightningContent(bolt11 string) string {
	if bolt11 == "" {
		return ""
	}
	return "LIGHTNING:" + strings.ToUpper(bolt11)
}

// InvoiceCodes makes the Lightning QR code of bolt11 and the Bitcoin QR
// code of the BIP21 URI. An empty input gives an empty data URI. Recent
// codes come from a cache, so an invoice polled or its checkout page
// reloaded does not draw them again. The two are drawn one after the
// other: about 25 µs each, where a goroutine for one of them cost a
// wake-up of the scheduler per create under load.
func InvoiceCodes(bolt11, bip21 string) (Codes, error) {
	var codes Codes
	var err error
	if bolt11 != "" {
		if codes.Lightning, err = cachedDataURI(LightningContent(bolt11)); err != nil {
			return Codes{}, err
		}
	}
	if bip21 != "" {
		if codes.Bitcoin, err = cachedDataURI(BitcoinContent(bip21)); err != nil {
			return Codes{}, err
		}
	}
	return codes, nil
}

// qrCacheSize is how many QR images the cache holds once full. An
// image is 1 to 4 KB, so the cache stays under about 12 MB.
const qrCacheSize = 3072

// qrCache keeps recent QR images, so that an invoice polled with GET, or
// its checkout page reloaded, does not draw its codes again. It holds
// qrCacheSize images once full, never more or fewer: a new image takes
// the slot of one not used since the clock hand last passed it, so its
// memory neither grows nor swings with the invoices created (two
// generations dropped together would swing between one and two).
var qrCache imageCache

type imageCache struct {
	sync.Mutex
	index map[string]int // content → slot
	slots []cachedImage
	hand  int
}

type cachedImage struct {
	content, uri string
	used         bool // since the hand last passed
}

func (c *imageCache) get(content string) (string, bool) {
	c.Lock()
	defer c.Unlock()
	i, ok := c.index[content]
	if !ok {
		return "", false
	}
	c.slots[i].used = true
	return c.slots[i].uri, true
}

func (c *imageCache) put(content, uri string) {
	c.Lock()
	defer c.Unlock()
	if _, ok := c.index[content]; ok {
		return // drawn at the same time by another caller
	}
	if c.index == nil {
		c.index = make(map[string]int, qrCacheSize)
		c.slots = make([]cachedImage, 0, qrCacheSize)
	}
	if len(c.slots) < qrCacheSize {
		c.index[content] = len(c.slots)
		c.slots = append(c.slots, cachedImage{content: content, uri: uri})
		return
	}
	for c.slots[c.hand].used {
		c.slots[c.hand].used = false
		c.hand = (c.hand + 1) % len(c.slots)
	}
	delete(c.index, c.slots[c.hand].content)
	c.slots[c.hand] = cachedImage{content: content, uri: uri}
	c.index[content] = c.hand
	c.hand = (c.hand + 1) % len(c.slots)
}

// cachedDataURI is DataURI through qrCache.
func cachedDataURI(content string) (string, error) {
	if uri, ok := qrCache.get(content); ok {
		return uri, nil
	}
	uri, err := DataURI(content)
	if err != nil {
		return "", err
	}
	qrCache.put(content, uri)
	return uri, nil
}

// DataURI returns content as a QR code in a PNG data URI
// (data:image/png;base64,…).
func DataURI(content string) (string, error) {
	sc := scratches.Get().(*scratch)
	defer scratches.Put(sc)
	code, err := encode(content, sc)
	if err != nil {
		return "", fmt.Errorf("make QR code: %w", err)
	}
	raw, err := drawPNG(code, sc)
	if err != nil {
		return "", fmt.Errorf("encode QR code: %w", err)
	}
	const prefix = "data:image/png;base64,"
	sc.b64 = base64.StdEncoding.AppendEncode(append(sc.b64[:0], prefix...), raw)
	return string(sc.b64), nil // the one allocation that outlives the call
}

// scratch holds the buffers of one DataURI call: everything but the
// resulting string is temporary, so it is reused through scratches
// instead of being allocated per image (two images per invoice).
type scratch struct {
	msg    []byte
	code   coding.Code
	bitmap []byte
	rows   []byte
	z      zlibRows
	png    []byte
	b64    []byte
}

// scratches reuses scratch buffers across calls.
var scratches = sync.Pool{New: func() any { return &scratch{} }}

// grow returns buf resized to n bytes, reusing its array when it is
// large enough. The contents are not cleared.
func grow(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, n)
	}
	return buf[:n]
}

// qrPlans caches rsc.io/qr's layout plan of each version: building one
// costs more than encoding with it, and a plan is only read.
var qrPlans sync.Map // coding.Version → *layout

// encode is rsc.io/qr's Encode (smallest version, mask 0) with the
// plan cached and the text split into segments: long runs of characters
// of QR's alphanumeric set (upper-case letters, digits, " $%*+-./:") take
// 5.5 bits a character instead of 8, which keeps a BIP21 URI with its
// Lightning invoice several versions smaller.
//
// The code's bitmap lives in sc (a new scratch when sc is nil) and is
// valid until sc is used again.
func encode(text string, sc *scratch) (*coding.Code, error) {
	segments := splitSegments(text)
	level := coding.Level(qrLevel)
	v := coding.Version(coding.MinVersion)
	for {
		bits := 0
		for _, s := range segments {
			bits += s.Bits(v)
		}
		if bits <= v.DataBytes(level)*8 {
			break
		}
		if v == coding.MaxVersion {
			return nil, fmt.Errorf("%d characters are too long for a QR code", len(text))
		}
		v++
	}
	plan, ok := qrPlans.Load(v)
	if !ok {
		p, err := coding.NewPlan(v, level, 0)
		if err != nil {
			return nil, err
		}
		plan, _ = qrPlans.LoadOrStore(v, newLayout(p))
	}
	return plan.(*layout).encode(segments, sc)
}

// layout is a plan flattened for encoding: the bitmap of everything
// fixed (finder patterns, timing, format, with the mask applied), the
// Reed-Solomon table of its blocks and, for each data or check module in
// the order of the message bits it shows, where it is. Encoding is then
// one copy and one branch-free pass over the message bits, where
// coding.Plan.Encode looks at every module's role.
type layout struct {
	plan   *coding.Plan
	size   int
	stride int
	base   []byte
	// place holds, per message bit (in message order), the module's
	// bitmap byte index << 3 | its bit's shift, and the message bit's
	// shift in its byte in bits 29–31.
	place  []uint32
	rs     *rsTable
	blocks int
}

func newLayout(p *coding.Plan) *layout {
	size := len(p.Pixel)
	l := &layout{plan: p, size: size, stride: (size + 7) &^ 7, blocks: p.Blocks}
	l.base = make([]byte, l.stride*size)
	type module struct{ offset, at uint32 }
	var modules []module
	for y, row := range p.Pixel {
		for x, pix := range row {
			if pix&coding.Black != 0 {
				l.base[y*l.stride+x/8] |= 0x80 >> (x % 8)
			}
			if r := pix.Role(); r == coding.Data || r == coding.Check {
				at := uint32(y*l.stride+x/8)<<3 | uint32(7-x%8)
				modules = append(modules, module{uint32(pix.Offset()), at})
			}
		}
	}
	slices.SortFunc(modules, func(a, b module) int { return cmp.Compare(a.offset, b.offset) })
	l.place = make([]uint32, len(modules))
	for i, m := range modules {
		if m.offset != uint32(i) {
			panic("qr: plan's message bits are not one module each")
		}
		l.place[i] = m.at | uint32(7-i%8)<<29
	}
	l.rs = rsTableOf(p.CheckBytes / p.Blocks)
	return l
}

// encode lays out the segments' bits and error correction: the same code
// as coding.Plan.Encode gives. Its buffers are sc's (nil: new ones).
func (l *layout) encode(segments []coding.Encoding, sc *scratch) (*coding.Code, error) {
	if sc == nil {
		sc = &scratch{}
	}
	nd := l.plan.DataBytes
	msg, err := appendSegments(sc.msg[:0], segments, l.plan.Version, nd)
	if err != nil {
		return nil, err
	}
	// The check bytes of each block after all the data, as
	// coding.Bits.AddCheckBytes lays them out (the plan interleaves).
	db, extra := nd/l.blocks, nd%l.blocks
	data := msg[:nd]
	for i := range l.blocks {
		n := db
		if i >= l.blocks-extra {
			n++
		}
		msg = l.rs.appendECC(msg, data[:n])
		data = data[n:]
	}
	sc.msg = msg
	if len(msg)*8 < len(l.place) {
		return nil, fmt.Errorf("qr: %d message bytes for %d modules", len(msg), len(l.place))
	}
	sc.bitmap = grow(sc.bitmap, len(l.base))
	bitmap := sc.bitmap
	copy(bitmap, l.base)
	for i, pl := range l.place {
		bit := msg[i>>3] >> (pl >> 29) & 1
		bitmap[pl&0x1fffffff>>3] ^= bit << (pl & 7)
	}
	sc.code = coding.Code{Bitmap: bitmap, Size: l.size, Stride: l.stride}
	return &sc.code, nil
}

// alnumValue is each byte's value in QR's alphanumeric set, 0xff for
// bytes outside it.
var alnumValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range []byte("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:") {
		t[c] = byte(i)
	}
	return t
}()

// qrBits writes bits most significant first, as QR's message does.
type qrBits struct {
	out []byte
	acc uint64
	n   uint
}

func (b *qrBits) write(v uint64, n uint) {
	b.acc = b.acc<<n | v
	b.n += n
	for b.n >= 8 {
		b.n -= 8
		b.out = append(b.out, byte(b.acc>>b.n))
	}
}

// appendSegments appends to msg the data bytes of segments for version
// v with nd data bytes: each segment's mode, count and characters, then
// the terminator and padding of coding.Bits.Pad.
func appendSegments(msg []byte, segments []coding.Encoding, v coding.Version, nd int) ([]byte, error) {
	class := 0 // character count widths: versions 1–9, 10–26, 27–40
	if v >= 27 {
		class = 2
	} else if v >= 10 {
		class = 1
	}
	b := qrBits{out: msg}
	for _, seg := range segments {
		switch s := seg.(type) {
		case coding.Alpha:
			b.write(2, 4)
			b.write(uint64(len(s)), uint([3]int{9, 11, 13}[class]))
			i := 0
			for ; i+2 <= len(s); i += 2 {
				c0, c1 := alnumValue[s[i]], alnumValue[s[i+1]]
				if c0 == 0xff || c1 == 0xff {
					return nil, fmt.Errorf("non-alphanumeric string %#q", string(s))
				}
				b.write(uint64(c0)*45+uint64(c1), 11)
			}
			if i < len(s) {
				c := alnumValue[s[i]]
				if c == 0xff {
					return nil, fmt.Errorf("non-alphanumeric string %#q", string(s))
				}
				b.write(uint64(c), 6)
			}
		case coding.String:
			b.write(4, 4)
			b.write(uint64(len(s)), uint([3]int{8, 16, 16}[class]))
			for i := 0; i < len(s); i++ {
				b.write(uint64(s[i]), 8)
			}
		default:
			return nil, fmt.Errorf("qr: segment %T not supported", seg)
		}
		if len(b.out)-len(msg) > nd {
			break
		}
	}
	bits := (len(b.out)-len(msg))*8 + int(b.n)
	if bits > nd*8 {
		return nil, fmt.Errorf("cannot encode %d bits into %d-bit code", bits, nd*8)
	}
	// Terminator (up to four zero bits), zeros to a byte, then the pad
	// bytes 0xec and 0x11 in turn.
	b.write(0, uint(min(4, nd*8-bits)))
	b.write(0, -b.n&7)
	for pad := byte(0xec); len(b.out)-len(msg) < nd; pad ^= 0xec ^ 0x11 {
		b.write(uint64(pad), 8)
	}
	return b.out, nil
}

// qrMinAlphaRun is the shortest run worth its own alphanumeric segment:
// a segment header costs about 13 bits, a character saves 2.5.
const qrMinAlphaRun = 10

// isAlpha reports whether c is in QR's alphanumeric set.
func isAlpha(c byte) bool { return alnumValue[c] != 0xff }

// splitSegments splits text into byte-mode segments and alphanumeric ones
// for the runs of at least qrMinAlphaRun alphanumeric characters.
func splitSegments(text string) []coding.Encoding {
	var segments []coding.Encoding
	start := 0 // start of the pending byte-mode segment
	for i := 0; i < len(text); {
		if !isAlpha(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isAlpha(text[j]) {
			j++
		}
		if j-i >= qrMinAlphaRun {
			if i > start {
				segments = append(segments, coding.String(text[start:i]))
			}
			segments = append(segments, coding.Alpha(text[i:j]))
			start = j
		}
		i = j
	}
	if start < len(text) || len(segments) == 0 {
		segments = append(segments, coding.String(text[start:]))
	}
	return segments
}

// BitcoinContent is what the Bitcoin QR code encodes: the BIP21 URI
// with its scheme and address in upper case (both are case-insensitive;
// BIP21 and BIP173 recommend it for QR codes), so that they, like the
// upper-case Lightning invoice, fit the alphanumeric mode.
func BitcoinContent(bip21 string) string {
	end := strings.IndexByte(bip21, '?')
	if end < 0 {
		end = len(bip21)
	}
	return strings.ToUpper(bip21[:end]) + bip21[end:]
}

// qrNibbles spreads the 8 modules of a bitmap byte over 4 bytes (big
// endian), a nibble each (qrScale is 4).
var qrNibbles = func() (t [256]uint32) {
	for b := range 256 {
		for m := range 8 {
			if b&(0x80>>m) != 0 {
				t[b] |= 0xf0000000 >> (4 * m)
			}
		}
	}
	return t
}()

// drawPNG draws code, quiet zone included, at qrScale (4) pixels per module
// as a 1-bit indexed PNG (palette white, black). It writes the rows and
// their compression itself (zlibRows): a module is one nibble of a row,
// a module row's first pixel row is coded byte by byte and its other
// three as one back-reference each. image/png's generic path, and
// later compress/zlib on rows built here, took most of an invoice
// creation's time.
// The PNG lives in sc (nil: new buffers) until sc is used again.
func drawPNG(code *coding.Code, sc *scratch) ([]byte, error) {
	if sc == nil {
		sc = scratches.New().(*scratch)
	}
	modules := code.Size + 2*qrQuietZone
	size := modules * qrScale
	stride := 1 + (size+7)/8 // filter byte (None), then packed pixels
	sc.rows = grow(sc.rows, stride*modules)
	rows := sc.rows
	clear(rows)

	out := sc.png[:0]
	out = append(out, "\x89PNG\r\n\x1a\n"...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(size))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(size))
	ihdr[8], ihdr[9] = 1, 3 // bit depth 1, indexed colour
	out = pngChunk(out, "IHDR", ihdr[:])
	out = pngChunk(out, "PLTE", []byte{0xff, 0xff, 0xff, 0, 0, 0})
	idatStart := len(out)
	out = append(out, 0, 0, 0, 0, 'I', 'D', 'A', 'T')

	// At 4 pixels a module a module is a nibble and the 4-module quiet
	// zone two bytes, so each byte of the code's bitmap becomes four
	// bytes of the row through a table. Each module row's line has its
	// own place in rows: zlibRows may refer back to the previous one.
	z := &sc.z
	z.start(out)
	bitmapBytes := (code.Size + 7) / 8
	for my := range modules {
		row := rows[my*stride : (my+1)*stride]
		if y := my - qrQuietZone; y >= 0 && y < code.Size {
			out := row[1+qrQuietZone/2:]
			for i, b := range code.Bitmap[y*code.Stride : y*code.Stride+bitmapBytes] {
				if 4*i+4 <= len(out) {
					binary.BigEndian.PutUint32(out[4*i:], qrNibbles[b])
				} else {
					var x [4]byte
					binary.BigEndian.PutUint32(x[:], qrNibbles[b])
					copy(out[min(4*i, len(out)):], x[:])
				}
			}
		}
		if err := z.line(row, qrScale); err != nil {
			return nil, err
		}
	}
	out = z.finish()
	idat := out[idatStart+8:]
	binary.BigEndian.PutUint32(out[idatStart:], uint32(len(idat)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[idatStart+4:]))
	sc.png = pngChunk(out, "IEND", nil)
	return sc.png, nil
}

func pngChunk(out []byte, kind string, data []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	start := len(out)
	out = append(out, kind...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
}
