package qr

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	rscqr "rsc.io/qr"
	"rsc.io/qr/coding"

	"github.com/kassapay/kassa"
)

// testBolt11 returns a realistic regtest BOLT11 string of 360
// characters, different per n (the checksum is not valid: the QR code
// does not care).
func testBolt11(n int) string {
	const charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
	var b strings.Builder
	b.WriteString("lnbcrt500u1p")
	x := uint32(n*2654435761 + 12345)
	for b.Len() < 360 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteByte(charset[x%32])
	}
	return b.String()
}

// testAddress returns a regtest bech32 address, different per n.
func testAddress(n int) string {
	return fmt.Sprintf("bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt%03d", n)
}

// checkQR decodes a PNG data URI and checks that its pixels are the
// modules of content's QR code at qrScale.
func checkQR(t *testing.T, dataURI, content string) {
	t.Helper()
	const prefix = "data:image/png;base64,"
	if !strings.HasPrefix(dataURI, prefix) {
		t.Fatalf("not a PNG data URI: %.40q", dataURI)
	}
	raw, err := base64.StdEncoding.DecodeString(dataURI[len(prefix):])
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if pal, ok := cfg.ColorModel.(color.Palette); !ok || len(pal) != 2 {
		t.Errorf("colour model %T, want a two-colour palette", cfg.ColorModel)
	}
	if raw[24] != 1 { // IHDR bit depth
		t.Errorf("bit depth %d, want 1", raw[24])
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	// Read it back with an independent decoder (ZXing's), as a wallet's
	// camera would.
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("QR code does not decode: %v", err)
	}
	if res.GetText() != content {
		t.Fatalf("QR code reads %q, want %q", res.GetText(), content)
	}
}

func TestInvoiceQRCodes(t *testing.T) {
	t.Parallel()
	bolt11 := testBolt11(1)
	uri := kassa.BIP21(testAddress(1), 25000, bolt11, "Alice's Shop")
	codes, err := InvoiceCodes(bolt11, uri)
	if err != nil {
		t.Fatal(err)
	}
	checkQR(t, codes.Lightning, "LIGHTNING:"+strings.ToUpper(bolt11))
	checkQR(t, codes.Bitcoin, BitcoinContent(uri))

	codes, err = InvoiceCodes("", "")
	if err != nil || codes != (Codes{}) {
		t.Errorf("QR codes of nothing = %+v, %v", codes, err)
	}
	if _, err := DataURI(strings.Repeat("x", 5000)); err == nil {
		t.Error("content too long for a QR code made one")
	}
}

// benchInvoices numbers the invoices of the benchmarks, across runs, so
// that the cache never answers for a new one.
var benchInvoices atomic.Int64

// BenchmarkInvoiceQRCodes measures the two QR images made on every
// invoice creation, for a realistic regtest BOLT11 (360 characters) and
// its BIP21 URI. Every iteration is a new invoice, so the cache never
// answers (also when -count or -benchtime runs it again).
func BenchmarkInvoiceQRCodes(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		bolt11 := testBolt11(1_000_000 + int(benchInvoices.Add(1)))
		if _, err := InvoiceCodes(bolt11, kassa.BIP21(testAddress(1), 25000, bolt11, "Alice's Shop")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvoiceQRCodesCached measures the same invoice's codes again,
// as a GET of the invoice or its checkout page makes them.
func BenchmarkInvoiceQRCodesCached(b *testing.B) {
	bolt11 := testBolt11(1)
	uri := kassa.BIP21(testAddress(1), 25000, bolt11, "Alice's Shop")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := InvoiceCodes(bolt11, uri); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQRLibraryPNG is the baseline: the encoder alone, without
// drawing or PNG.
func BenchmarkQRLibraryPNG(b *testing.B) {
	bolt11 := testBolt11(1)
	uri := kassa.BIP21(testAddress(1), 25000, bolt11, "Alice's Shop")
	b.ReportAllocs()
	for b.Loop() {
		for _, content := range []string{LightningContent(bolt11), uri} {
			if _, err := rscqr.Encode(content, rscqr.M); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func TestQRSegments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", "S()"},
		{"abc", "S(abc)"},
		{"ABCDEFGHIJ", "A(ABCDEFGHIJ)"},
		{"ABCDEFGHI", "S(ABCDEFGHI)"},
		{"BITCOIN:BCRT1QXYZ0123456?amount=0.001&lightning=LNBCRT1234567890",
			"A(BITCOIN:BCRT1QXYZ0123456) S(?amount=0.001&lightning=) A(LNBCRT1234567890)"},
	} {
		var parts []string
		for _, s := range splitSegments(c.in) {
			switch s := s.(type) {
			case coding.Alpha:
				parts = append(parts, "A("+string(s)+")")
			case coding.String:
				parts = append(parts, "S("+string(s)+")")
			}
		}
		if got := strings.Join(parts, " "); got != c.want {
			t.Errorf("splitSegments(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	if got := BitcoinContent("bitcoin:bcrt1qabc?amount=1&label=Shop"); got != "BITCOIN:BCRT1QABC?amount=1&label=Shop" {
		t.Errorf("bitcoinQRContent = %s", got)
	}
}

// BenchmarkBitcoinQR compares the Bitcoin QR code of a BIP21 URI with a
// Lightning invoice as one byte-mode segment and as mixed segments.
func BenchmarkBitcoinQR(b *testing.B) {
	bolt11 := testBolt11(1)
	uri := BitcoinContent(kassa.BIP21(testAddress(1), 25000, bolt11, "Alice's Shop"))
	b.Run("byte-mode", func(b *testing.B) {
		for b.Loop() {
			code, err := rscqr.Encode(uri, rscqr.M)
			if err != nil {
				b.Fatal(err)
			}
			_ = code
		}
	})
	b.Run("segments", func(b *testing.B) {
		for b.Loop() {
			if _, err := encode(uri, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestQRLayoutMatchesLibrary checks the flattened layout against
// rsc.io/qr's own Plan.Encode, bit for bit, across versions.
func TestQRLayoutMatchesLibrary(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 600; n += 37 {
		text := strings.Repeat("BITCOIN:BC1Q?amount=0.1&", n)[:n*3]
		segments := splitSegments(text)
		for v := coding.Version(coding.MinVersion); v <= coding.MaxVersion; v++ {
			bits := 0
			for _, s := range segments {
				bits += s.Bits(v)
			}
			if bits > v.DataBytes(coding.Level(qrLevel))*8 {
				continue
			}
			plan, err := coding.NewPlan(v, coding.Level(qrLevel), 0)
			if err != nil {
				t.Fatal(err)
			}
			want, err := plan.Encode(segments...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := newLayout(plan).encode(segments, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bitmap, want.Bitmap) || got.Size != want.Size || got.Stride != want.Stride {
				t.Fatalf("version %d, %d characters: layout differs from Plan.Encode", v, len(text))
			}
			break
		}
	}
}

// BenchmarkQRPNG measures drawing and compressing one code.
func BenchmarkQRPNG(b *testing.B) {
	code, err := encode(BitcoinContent(kassa.BIP21(testAddress(1), 25000, testBolt11(1), "Alice's Shop")), nil)
	if err != nil {
		b.Fatal(err)
	}
	sc := scratches.New().(*scratch)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := drawPNG(code, sc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestScratchReuse checks that reused buffers leave nothing behind: a
// small code drawn after a large one, on the same scratch, is the same
// image as on fresh buffers.
func TestScratchReuse(t *testing.T) {
	t.Parallel()
	small, large := "BITCOIN:BCRT1QABC", LightningContent(testBolt11(7))
	fresh, err := DataURI(small)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // the pool may hand out the same scratch each time
		if _, err := DataURI(large); err != nil {
			t.Fatal(err)
		}
		again, err := DataURI(small)
		if err != nil {
			t.Fatal(err)
		}
		if again != fresh {
			t.Fatal("a code drawn after a larger one differs")
		}
	}
	checkQR(t, fresh, small)
}

// TestQRPixelsMatchLibrary draws codes of every version and checks each
// pixel of the decoded PNG against rsc.io/qr's own encoding of the same
// segments (mask 0, level M), at qrScale pixels a module inside a
// qrQuietZone-module white border; and that the zlib stream inflates,
// checksum included, to exactly the image's filtered rows.
func TestQRPixelsMatchLibrary(t *testing.T) {
	t.Parallel()
	seen := map[coding.Version]bool{}
	for n := 1; n <= 3391 && len(seen) < 40; n += 7 {
		text := LightningContent(testBolt11(n))
		if n%3 == 0 {
			text = BitcoinContent(kassa.BIP21(testAddress(n), 25000, testBolt11(n), "Alice's Shop"))
		}
		text = strings.Repeat(text, n/300+1)[:n]
		segments := splitSegments(text)
		v := coding.Version(coding.MinVersion)
		for ; v <= coding.MaxVersion; v++ {
			bits := 0
			for _, s := range segments {
				bits += s.Bits(v)
			}
			if bits <= v.DataBytes(coding.Level(qrLevel))*8 {
				break
			}
		}
		if v > coding.MaxVersion || seen[v] {
			continue
		}
		seen[v] = true
		plan, err := coding.NewPlan(v, coding.Level(qrLevel), 0)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plan.Encode(segments...)
		if err != nil {
			t.Fatal(err)
		}
		uri, err := DataURI(text)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(uri, "data:image/png;base64,"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		modules := want.Size + 2*qrQuietZone
		if b := img.Bounds(); b.Dx() != modules*qrScale || b.Dy() != modules*qrScale {
			t.Fatalf("version %d: image %v, want %d pixels square", v, b, modules*qrScale)
		}
		for py := range modules * qrScale {
			for px := range modules * qrScale {
				x, y := px/qrScale-qrQuietZone, py/qrScale-qrQuietZone
				black := x >= 0 && y >= 0 && x < want.Size && y < want.Size && want.Black(x, y)
				r, _, _, _ := img.At(px, py).RGBA()
				if (r == 0) != black {
					t.Fatalf("version %d: pixel (%d,%d) black=%v, want %v", v, px, py, r == 0, black)
				}
			}
		}
		// The IDAT chunk (the fourth chunk: after the signature, IHDR
		// and PLTE) inflates to size lines of 1+size/8 bytes.
		idat := raw[8+25+18:]
		if string(idat[4:8]) != "IDAT" {
			t.Fatalf("chunk %q, want IDAT", idat[4:8])
		}
		zr, err := zlib.NewReader(bytes.NewReader(idat[8 : 8+binary.BigEndian.Uint32(idat)]))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("version %d: inflate: %v", v, err)
		}
		size := modules * qrScale
		if len(rows) != size*(1+(size+7)/8) {
			t.Fatalf("version %d: %d bytes of rows, want %d", v, len(rows), size*(1+(size+7)/8))
		}
	}
	if len(seen) != 40 {
		t.Errorf("drew versions %v, want all 40", seen)
	}
}

// cachedImages is how many images qrCache holds.
func cachedImages() int {
	qrCache.Lock()
	defer qrCache.Unlock()
	return len(qrCache.index)
}

// TestQRCacheHoldsAFixedNumber: once full, the cache holds qrCacheSize
// images whatever the number of invoices made, so that memory does not
// swing with it (two generations dropped together held between one and
// two generations: issue 23's closed-invoice slope).
func TestQRCacheHoldsAFixedNumber(t *testing.T) {
	qrCache = imageCache{}
	t.Cleanup(func() { qrCache = imageCache{} })
	for i := range 3 * qrCacheSize {
		if _, err := cachedDataURI(fmt.Sprint("kassa-", i)); err != nil {
			t.Fatal(err)
		}
		if n, want := cachedImages(), min(i+1, qrCacheSize); n != want {
			t.Fatalf("after %d images the cache holds %d, want %d", i+1, n, want)
		}
	}
}

// TestQRCacheKeepsWhatIsUsed: an invoice polled while others are made
// keeps its images in the cache; one not asked for again leaves it.
func TestQRCacheKeepsWhatIsUsed(t *testing.T) {
	qrCache = imageCache{}
	t.Cleanup(func() { qrCache = imageCache{} })
	hot, err := cachedDataURI("hot")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * qrCacheSize {
		qrCache.put(fmt.Sprint("kassa-", i), "data:"+fmt.Sprint(i))
		if i%(qrCacheSize/2) == 0 {
			if uri, ok := qrCache.get("hot"); !ok || uri != hot {
				t.Fatalf("after %d others the polled image is gone", i)
			}
		}
	}
	if _, ok := qrCache.get("kassa-0"); ok {
		t.Error("an image not asked for again is still cached after 3 × the cache's size")
	}
	if uri, ok := qrCache.get(fmt.Sprint("kassa-", 3*qrCacheSize-1)); !ok || uri != fmt.Sprint("data:", 3*qrCacheSize-1) {
		t.Errorf("the newest image = %q, %v", uri, ok)
	}
}
