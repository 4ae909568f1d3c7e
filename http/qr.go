package http

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"sync"

	qrcode "github.com/skip2/go-qrcode"
)

// qrScale is the number of pixels per QR module. Pages scale the image up
// with CSS (image-rendering: pixelated), so it stays small.
const qrScale = 4

// qrLevel is the error-correction level of every QR code: M, which wallet
// cameras read well off a screen.
const qrLevel = qrcode.Medium

// qrPalette is black on white; a two-colour palette makes the encoder
// write a 1-bit PNG.
var qrPalette = color.Palette{color.White, color.Black}

// pngEncoder is tuned for speed: QR images are made on every invoice
// creation and compress well at any level.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngBuffers{}}

// pngBuffers reuses the encoder's buffers between images.
type pngBuffers struct{ pool sync.Pool }

func (p *pngBuffers) Get() *png.EncoderBuffer {
	b, _ := p.pool.Get().(*png.EncoderBuffer)
	return b
}

func (p *pngBuffers) Put(b *png.EncoderBuffer) { p.pool.Put(b) }

// qrCodes are the two QR images of an invoice.
type qrCodes struct {
	LightningQR string `json:"lightningQR"`
	BitcoinQR   string `json:"bitcoinQR"`
}

// lightningURI is what the Lightning QR code encodes: the BOLT11 invoice
// in upper case, which QR codes store in their denser alphanumeric mode.
func lightningURI(bolt11 string) string {
	if bolt11 == "" {
		return ""
	}
	return "lightning:" + strings.ToUpper(bolt11)
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
		codes.BitcoinQR, btcErr = cachedQRDataURI(bip21)
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
	img, err := qrImage(content)
	if err != nil {
		return "", err
	}
	var raw bytes.Buffer
	if err := pngEncoder.Encode(&raw, img); err != nil {
		return "", fmt.Errorf("encode QR code: %w", err)
	}
	const prefix = "data:image/png;base64,"
	out := make([]byte, len(prefix)+base64.StdEncoding.EncodedLen(raw.Len()))
	copy(out, prefix)
	base64.StdEncoding.Encode(out[len(prefix):], raw.Bytes())
	return string(out), nil
}

// qrImage draws content as a QR code, quiet zone included, at qrScale
// pixels per module.
func qrImage(content string) (*image.Paletted, error) {
	q, err := qrcode.New(content, qrLevel)
	if err != nil {
		return nil, fmt.Errorf("make QR code: %w", err)
	}
	bitmap := q.Bitmap()
	size := len(bitmap) * qrScale
	img := image.NewPaletted(image.Rect(0, 0, size, size), qrPalette)
	for y, modules := range bitmap {
		row := img.Pix[y*qrScale*img.Stride : y*qrScale*img.Stride+size]
		for x, dark := range modules {
			if dark {
				for i := range qrScale {
					row[x*qrScale+i] = 1
				}
			}
		}
		for i := 1; i < qrScale; i++ {
			copy(img.Pix[(y*qrScale+i)*img.Stride:], row)
		}
	}
	return img, nil
}
