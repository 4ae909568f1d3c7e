package http

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"

	"rsc.io/qr"
	"rsc.io/qr/coding"
)

// qrScale is the number of pixels per QR module. Pages scale the image up
// with CSS (image-rendering: pixelated), so it stays small.
const qrScale = 4

// qrLevel is the error-correction level of every QR code: M, which wallet
// cameras read well off a screen.
const qrLevel = qr.M

// qrQuietZone is the blank border around a code, in modules (the
// standard asks for four).
const qrQuietZone = 4

// qrCodes are the two QR images of an invoice.
type qrCodes struct {
	LightningQR string `json:"lightningQR"`
	BitcoinQR   string `json:"bitcoinQR"`
}

// lightningURI is what the Lightning QR code encodes: the URI in upper
// case (schemes are case-insensitive), which QR codes store in their
// denser alphanumeric mode.
func lightningURI(bolt11 string) string {
	if bolt11 == "" {
		return ""
	}
	return "LIGHTNING:" + strings.ToUpper(bolt11)
}

// invoiceQRCodes makes the Lightning QR code of bolt11 and the Bitcoin QR
// code of the BIP21 URI, the two at once. An empty input gives an empty
// data URI.
func invoiceQRCodes(bolt11, bip21 string) (qrCodes, error) {
	var codes qrCodes
	var lnErr, btcErr error
	var wg sync.WaitGroup
	if bolt11 != "" {
		wg.Go(func() { codes.LightningQR, lnErr = cachedQRDataURI(lightningURI(bolt11)) })
	}
	if bip21 != "" {
		codes.BitcoinQR, btcErr = cachedQRDataURI(bitcoinQRContent(bip21))
	}
	wg.Wait()
	if lnErr != nil {
		return qrCodes{}, lnErr
	}
	if btcErr != nil {
		return qrCodes{}, btcErr
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

// cachedQRDataURI is qrDataURI through qrCache.
func cachedQRDataURI(content string) (string, error) {
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
	uri, err := qrDataURI(content)
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

// qrDataURI returns content as a QR code in a PNG data URI
// (data:image/png;base64,…).
func qrDataURI(content string) (string, error) {
	code, err := qrEncode(content)
	if err != nil {
		return "", fmt.Errorf("make QR code: %w", err)
	}
	raw, err := qrPNG(code)
	if err != nil {
		return "", fmt.Errorf("encode QR code: %w", err)
	}
	const prefix = "data:image/png;base64,"
	out := make([]byte, len(prefix)+base64.StdEncoding.EncodedLen(len(raw)))
	copy(out, prefix)
	base64.StdEncoding.Encode(out[len(prefix):], raw)
	return string(out), nil
}

// qrPlans caches rsc.io/qr's layout plan of each version: building one
// costs more than encoding with it, and a plan is only read.
var qrPlans sync.Map // coding.Version → *coding.Plan

// qrEncode is rsc.io/qr's Encode (smallest version, mask 0) with the
// plan cached and the text split into segments: long runs of characters
// of QR's alphanumeric set (upper-case letters, digits, " $%*+-./:") take
// 5.5 bits a character instead of 8, which keeps a BIP21 URI with its
// Lightning invoice several versions smaller.
func qrEncode(text string) (*coding.Code, error) {
	segments := qrSegments(text)
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
		plan, _ = qrPlans.LoadOrStore(v, p)
	}
	return plan.(*coding.Plan).Encode(segments...)
}

// qrMinAlphaRun is the shortest run worth its own alphanumeric segment:
// a segment header costs about 13 bits, a character saves 2.5.
const qrMinAlphaRun = 10

func qrAlpha(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || strings.IndexByte(" $%*+-./:", c) >= 0
}

// qrSegments splits text into byte-mode segments and alphanumeric ones
// for the runs of at least qrMinAlphaRun alphanumeric characters.
func qrSegments(text string) []coding.Encoding {
	var segments []coding.Encoding
	start := 0 // start of the pending byte-mode segment
	for i := 0; i < len(text); {
		if !qrAlpha(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && qrAlpha(text[j]) {
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

// bitcoinQRContent is what the Bitcoin QR code encodes: the BIP21 URI
// with its scheme and address in upper case (both are case-insensitive;
// BIP21 and BIP173 recommend it for QR codes), so that they, like the
// upper-case Lightning invoice, fit the alphanumeric mode.
func bitcoinQRContent(bip21 string) string {
	end := strings.IndexByte(bip21, '?')
	if end < 0 {
		end = len(bip21)
	}
	return strings.ToUpper(bip21[:end]) + bip21[end:]
}

// zlibWriters reuses compressors: a new one allocates hundreds of KB.
var zlibWriters = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.HuffmanOnly)
	return w
}}

// qrPNG draws code, quiet zone included, at qrScale (4) pixels per module
// as a 1-bit indexed PNG (palette white, black). It writes the rows
// itself: a module is one nibble of a row, and every pixel row that
// repeats the one above is written with PNG's Up filter as zeros, so
// Huffman coding alone compresses the image to a few hundred bytes.
// image/png's generic path took most of an invoice creation's time.
func qrPNG(code *coding.Code) ([]byte, error) {
	modules := code.Size + 2*qrQuietZone
	size := modules * qrScale
	stride := 1 + (size+7)/8 // filter byte, then packed pixels
	rows := make([]byte, stride*size)
	for my := 0; my < modules; my++ {
		row := rows[my*qrScale*stride : (my*qrScale+1)*stride]
		y := my - qrQuietZone
		if y >= 0 && y < code.Size {
			bits := code.Bitmap[y*code.Stride:]
			for x := 0; x < code.Size; x++ {
				if bits[x/8]&(0x80>>(x%8)) != 0 {
					mx := x + qrQuietZone
					row[1+mx/2] |= 0xf0 >> (4 * (mx % 2))
				}
			}
		}
		for i := 1; i < qrScale; i++ {
			rows[(my*qrScale+i)*stride] = 2 // Up: same as the row above
		}
	}
	var idat bytes.Buffer
	zw := zlibWriters.Get().(*zlib.Writer)
	zw.Reset(&idat)
	if _, err := zw.Write(rows); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	zlibWriters.Put(zw)

	out := make([]byte, 0, idat.Len()+64)
	out = append(out, "\x89PNG\r\n\x1a\n"...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(size))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(size))
	ihdr[8], ihdr[9] = 1, 3 // bit depth 1, indexed colour
	out = pngChunk(out, "IHDR", ihdr[:])
	out = pngChunk(out, "PLTE", []byte{0xff, 0xff, 0xff, 0, 0, 0})
	out = pngChunk(out, "IDAT", idat.Bytes())
	return pngChunk(out, "IEND", nil), nil
}

func pngChunk(out []byte, kind string, data []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	start := len(out)
	out = append(out, kind...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
}
