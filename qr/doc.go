// Package qr draws the QR codes of an invoice as small PNG data URIs:
// the Lightning invoice and the BIP21 URI, each in the densest segments
// QR allows, at four pixels a module, as a 1-bit indexed PNG written
// directly rather than through image/png.
//
// rsc.io/qr/coding does the error correction; this package caches its
// layout plans, places the modules itself in one pass and keeps recent
// images in a small cache, because every invoice creation draws two codes.
package qr
