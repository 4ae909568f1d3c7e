package qr

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
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
// code of the BIP21 URI, the two at once. An empty input gives an empty
// data URI. Recent codes come from a cache, so an invoice polled or its
// checkout page reloaded does not draw them again.
func InvoiceCodes(bolt11, bip21 string) (Codes, error) {
	var codes Codes
	var lnErr, btcErr error
	var wg sync.WaitGroup
	if bolt11 != "" {
		wg.Go(func() { codes.Lightning, lnErr = cachedDataURI(LightningContent(bolt11)) })
	}
	if bip21 != "" {
		codes.Bitcoin, btcErr = cachedDataURI(BitcoinContent(bip21))
	}
	wg.Wait()
	if lnErr != nil {
		return Codes{}, lnErr
	}
	if btcErr != nil {
		return Codes{}, btcErr
	}
	return codes, nil
}

// qrCacheSize is how many QR images each generation of the cache holds.
// An image is 2 to 4 KB, so the cache stays under about 16 MB.
const qrCacheSize = 2048

// qrCache keeps recent QR images, so that an invoice polled with GET, or
// its checkout page reloaded, does not draw its codes again. It has two
// generations: when the current one is full it becomes the previous one
// and the old previous one is dropped.
var qrCache = struct {
	sync.Mutex
	current, previous map[string]string
}{current: map[string]string{}}

// cachedDataURI is DataURI through qrCache.
func cachedDataURI(content string) (string, error) {
	qrCache.Lock()
	uri, ok := qrCache.current[content]
	if !ok {
		if uri, ok = qrCache.previous[content]; ok {
			qrCache.current[content] = uri
		}
	}
	qrCache.Unlock()
	if ok {
		return uri, nil
	}
	uri, err := DataURI(content)
	if err != nil {
		return "", err
	}
	qrCache.Lock()
	if len(qrCache.current) >= qrCacheSize {
		qrCache.previous, qrCache.current = qrCache.current, make(map[string]string, qrCacheSize)
	}
	qrCache.current[content] = uri
	qrCache.Unlock()
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
	bits   coding.Bits
	code   coding.Code
	bitmap []byte
	rows   []byte
	idat   bytes.Buffer
	zlib   *zlib.Writer
	png    []byte
	b64    []byte
}

// scratches reuses scratch buffers across calls.
var scratches = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return &scratch{zlib: w}
}}

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
// fixed (finder patterns, timing, format, with the mask applied) and, for
// each data or check module, where it is and which bit of the message it
// shows. Encoding is then one copy and one pass over the message bits,
// where coding.Plan.Encode looks at every module's role.
type layout struct {
	plan   *coding.Plan
	size   int
	stride int
	base   []byte
	pos    []uint32 // bit index into the bitmap of each message bit's module
	offset []uint32 // message bit offset shown by that module
}

func newLayout(p *coding.Plan) *layout {
	size := len(p.Pixel)
	l := &layout{plan: p, size: size, stride: (size + 7) &^ 7}
	l.base = make([]byte, l.stride*size)
	for y, row := range p.Pixel {
		for x, pix := range row {
			if pix&coding.Black != 0 {
				l.base[y*l.stride+x/8] |= 0x80 >> (x % 8)
			}
			if r := pix.Role(); r == coding.Data || r == coding.Check {
				l.pos = append(l.pos, uint32(y*l.stride*8+x))
				l.offset = append(l.offset, uint32(pix.Offset()))
			}
		}
	}
	return l
}

// encode lays out the segments' bits and error correction: the same code
// as coding.Plan.Encode gives. Its buffers are sc's (nil: new ones).
func (l *layout) encode(segments []coding.Encoding, sc *scratch) (*coding.Code, error) {
	if sc == nil {
		sc = &scratch{}
	}
	b := &sc.bits
	b.Reset()
	for _, s := range segments {
		if err := s.Check(); err != nil {
			return nil, err
		}
		s.Encode(b, l.plan.Version)
	}
	if b.Bits() > l.plan.DataBytes*8 {
		return nil, fmt.Errorf("cannot encode %d bits into %d-bit code", b.Bits(), l.plan.DataBytes*8)
	}
	b.AddCheckBytes(l.plan.Version, l.plan.Level)
	msg := b.Bytes()
	sc.bitmap = grow(sc.bitmap, len(l.base))
	bitmap := sc.bitmap
	copy(bitmap, l.base)
	for i, o := range l.offset {
		if msg[o/8]&(0x80>>(o%8)) != 0 {
			p := l.pos[i]
			bitmap[p/8] ^= 0x80 >> (p % 8)
		}
	}
	sc.code = coding.Code{Bitmap: bitmap, Size: l.size, Stride: l.stride}
	return &sc.code, nil
}

// qrMinAlphaRun is the shortest run worth its own alphanumeric segment:
// a segment header costs about 13 bits, a character saves 2.5.
const qrMinAlphaRun = 10

func isAlpha(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || strings.IndexByte(" $%*+-./:", c) >= 0
}

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

// qrNibbles spreads the 8 modules of a bitmap byte over 4 bytes, a
// nibble each (qrScale is 4).
var qrNibbles = func() (t [256][4]byte) {
	for b := range 256 {
		for m := range 8 {
			if b&(0x80>>m) != 0 {
				t[b][m/2] |= 0xf0 >> (4 * (m % 2))
			}
		}
	}
	return t
}()

// drawPNG draws code, quiet zone included, at qrScale (4) pixels per module
// as a 1-bit indexed PNG (palette white, black). It writes the rows
// itself: a module is one nibble of a row, and every pixel row that
// repeats the one above is written with PNG's Up filter as zeros, which
// deflate's fastest level compresses to almost nothing.
// image/png's generic path took most of an invoice creation's time.
// The PNG lives in sc (nil: new buffers) until sc is used again.
func drawPNG(code *coding.Code, sc *scratch) ([]byte, error) {
	if sc == nil {
		sc = scratches.New().(*scratch)
	}
	modules := code.Size + 2*qrQuietZone
	size := modules * qrScale
	stride := 1 + (size+7)/8 // filter byte, then packed pixels
	sc.rows = grow(sc.rows, stride*size)
	rows := sc.rows
	clear(rows)
	// At 4 pixels a module a module is a nibble and the 4-module quiet
	// zone two bytes, so each byte of the code's bitmap becomes four
	// bytes of the row through a table.
	bitmapBytes := (code.Size + 7) / 8
	for my := 0; my < modules; my++ {
		row := rows[my*qrScale*stride : (my*qrScale+1)*stride]
		if y := my - qrQuietZone; y >= 0 && y < code.Size {
			out := row[1+qrQuietZone/2:]
			for i, b := range code.Bitmap[y*code.Stride : y*code.Stride+bitmapBytes] {
				x := qrNibbles[b]
				copy(out[min(4*i, len(out)):], x[:])
			}
		}
		for i := 1; i < qrScale; i++ {
			rows[(my*qrScale+i)*stride] = 2 // Up: same as the row above
		}
	}
	idat := &sc.idat
	idat.Reset()
	zw := sc.zlib
	zw.Reset(idat)
	if _, err := zw.Write(rows); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}

	out := sc.png[:0]
	out = append(out, "\x89PNG\r\n\x1a\n"...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(size))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(size))
	ihdr[8], ihdr[9] = 1, 3 // bit depth 1, indexed colour
	out = pngChunk(out, "IHDR", ihdr[:])
	out = pngChunk(out, "PLTE", []byte{0xff, 0xff, 0xff, 0, 0, 0})
	out = pngChunk(out, "IDAT", idat.Bytes())
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
