package egress

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/kassapay/kassa"
)

// MaxURLLength is the longest webhook URL accepted.
const MaxURLLength = 2048

// schemes names the URL beginnings the client accepts: https:// only, or
// (kassa serve --dev) http:// as well, to loopback and private addresses
// too when AllowPrivate.
func (c *Client) schemes() string {
	switch {
	case c.requireHTTPS:
		return "https://"
	case c.allowPrivate:
		return "https:// or http:// (loopback and private addresses allowed)"
	}
	return "https:// or http://"
}

// CheckURL checks the form of a webhook URL without any network access:
// at most MaxURLLength bytes, absolute, scheme http or https (https only
// when RequireHTTPS), a host, no user name or password, a port in range
// if one is given, and, unless AllowPrivate, no non-public IP address as
// the host. Host names are resolved and checked when a request is made.
// The error is a kassa.Invalid *kassa.Error.
func (c *Client) CheckURL(rawURL string) error {
	if rawURL == "" {
		return kassa.Errorf(kassa.Invalid, "webhook URL is empty")
	}
	if len(rawURL) > MaxURLLength {
		return kassa.Errorf(kassa.Invalid, "webhook URL is longer than %d characters", MaxURLLength)
	}
	if strings.TrimSpace(rawURL) != rawURL {
		return kassa.Errorf(kassa.Invalid, "webhook URL has leading or trailing spaces")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return kassa.Errorf(kassa.Invalid, "webhook URL is not a valid URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if c.requireHTTPS {
			return kassa.Errorf(kassa.Invalid, "webhook URL must use https")
		}
	case "":
		return kassa.Errorf(kassa.Invalid, "webhook URL must be absolute, starting with %s", c.schemes())
	default:
		return kassa.Errorf(kassa.Invalid, "webhook URL has scheme %q; use %s", u.Scheme, c.schemes())
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return kassa.Errorf(kassa.Invalid, "webhook URL has no host")
	}
	if u.User != nil {
		return kassa.Errorf(kassa.Invalid, "webhook URL must not contain a user name or password")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return kassa.Errorf(kassa.Invalid, "webhook URL has an invalid port %q", p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return kassa.Errorf(kassa.Invalid, "webhook URL has an empty port")
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := c.check(u.Hostname(), ip, true); err != nil {
			return kassa.Errorf(kassa.Invalid, "%s", err.Error())
		}
	}
	return nil
}
