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
// code of the BIP21 URI. An empty input gives an empty data URI.
func invoiceQRCodes(bolt11, bip21 string) (qrCodes, error) {
	var codes qrCodes
	var err error
	if bolt11 != "" {
		if codes.LightningQR, err = qrDataURI(lightningURI(bolt11)); err != nil {
			return qrCodes{}, err
		}
	}
	if bip21 != "" {
		if codes.BitcoinQR, err = qrDataURI(bip21); err != nil {
			return qrCodes{}, err
		}
	}
	return codes, nil
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
