// Package qr draws the QR codes of an invoice as small PNG data URIs:
// the Lightning invoice and the BIP21 URI, each in the densest segments
// QR allows, at four pixels a module, as a 1-bit indexed PNG written
// directly rather than through image/png.
//
// rsc.io/qr/coding gives the layout plan of each version (module
// places, mask 0) and the Galois field; this package caches the plans
// flattened, writes the message bits, computes the Reed-Solomon check
// bytes with a table per block size, places the modules in one pass and
// compresses the image with its own one-block deflate coder (deflate.go),
// made for the four byte values and repeated rows of a QR image. It keeps
// recent images in a small cache, because every invoice creation draws
// two codes. Tests check every pixel against rsc.io/qr's own encoding and
// read the codes back with ZXing's decoder.
package qr
