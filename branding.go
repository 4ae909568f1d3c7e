package kassa

import (
	"encoding/base64"
	"strings"
)

// MaxLogoURLLength bounds a store's logo: the data URI of a small image.
// The logo lives in the store record, which every invoice creation reads.
const MaxLogoURLLength = 48 << 10

// logoTypes are the image types a logo may have. SVG is left out: an
// image the browser draws from markup is more than a logo needs.
var logoTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// ValidateLogoURL checks a store's logo: empty, or a base64 data URI of a
// PNG, JPEG, GIF or WebP image of at most MaxLogoURLLength characters. The
// customer pages load nothing from other origins (docs/decisions.md,
// "Checkout page"), so a logo on the merchant's own server is not taken.
func ValidateLogoURL(logo string) error {
	if logo == "" {
		return nil
	}
	if len(logo) > MaxLogoURLLength {
		return Errorf(Invalid, "must be at most %d characters (a small image)", MaxLogoURLLength)
	}
	head, data, ok := strings.Cut(logo, ",")
	mediaType, isBase64 := strings.CutSuffix(strings.TrimPrefix(head, "data:"), ";base64")
	if !ok || !strings.HasPrefix(head, "data:") || !isBase64 || !oneOf(mediaType, logoTypes) {
		return Errorf(Invalid, "must be a data URI of a PNG, JPEG, GIF or WebP image, data:image/png;base64,…: the checkout page loads nothing from other sites")
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil || data == "" {
		return Errorf(Invalid, "must hold the image in base64")
	}
	return nil
}

// ValidateBrandColor checks a store's accent colour: empty or #rrggbb.
func ValidateBrandColor(c string) error {
	if c == "" {
		return nil
	}
	ok := len(c) == 7 && c[0] == '#'
	for i := 1; ok && i < len(c); i++ {
		ok = c[i] >= '0' && c[i] <= '9' || c[i] >= 'a' && c[i] <= 'f' || c[i] >= 'A' && c[i] <= 'F'
	}
	if !ok {
		return Errorf(Invalid, "must be a colour written #rrggbb, such as #1a56db")
	}
	return nil
}

func oneOf(s string, list []string) bool {
	for _, v := range list {
		if s == v {
			return true
		}
	}
	return false
}
