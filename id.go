package kassa

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"strings"
)

var idEncoding = base32.NewEncoding("abcdefghijkmnpqrstuvwxyz23456789").WithPadding(base32.NoPadding)

// NewID returns a random, URL-safe, opaque identifier of 20 characters
// (100 bits), with prefix in front of it.
func NewID(prefix string) string {
	var b [13]byte
	_, _ = rand.Read(b[:])
	return prefix + idEncoding.EncodeToString(b[:])[:20]
}

// NewSecret returns 32 random bytes as lower-case hex: API keys and
// webhook secrets.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id may name a resource: 1 to 64 characters of
// letters, digits, '-' and '_'. Path parameters are checked with it before
// any look-up, so that no key of storage is built from hostile bytes.
func ValidID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	return strings.IndexFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) < 0
}
