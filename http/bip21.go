package http

import (
	"net/url"
	"strconv"

	"github.com/kassapay/kassa"
)

// bip21 is kassa.BIP21 until it lands. TEMPORARY.
func bip21(address string, amount kassa.Sats, lightning, label string) string {
	q := url.Values{}
	if amount > 0 {
		q.Set("amount", strconv.FormatFloat(float64(amount)/1e8, 'f', -1, 64))
	}
	if lightning != "" {
		q.Set("lightning", lightning)
	}
	if label != "" {
		q.Set("label", label)
	}
	return "bitcoin:" + address + "?" + q.Encode()
}
