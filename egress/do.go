package egress

import "net/http"

// Do sends req through the Client's checked dialer: the same refusal of
// non-public addresses, no proxy, no redirects, as webhooks get. The
// LNURL-pay client uses it to reach stores' Lightning addresses. The
// caller bounds the request with its context and reads the body within
// its own limit.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	return c.http.Do(req)
}
