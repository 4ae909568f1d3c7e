package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// blockedError refuses an address that is not public.
type blockedError struct {
	Host  string     // the URL's host, "" when only the dialed address is known
	Addr  netip.Addr // the refused address
	Class string     // why: "loopback", "private", ...
	// Literal is true when Host is Addr written in the URL.
	Literal bool
}

func (e *blockedError) Error() string {
	switch {
	case e.Literal:
		return fmt.Sprintf("webhook URL points to %s, which is not a public address (%s); only public addresses are allowed", e.Addr, e.Class)
	case e.Host != "":
		// The address itself is not shown: it comes from the service's
		// resolver and may describe an internal network.
		return fmt.Sprintf("host %q resolves to an address that is not public (%s); only public addresses are allowed", e.Host, e.Class)
	}
	return fmt.Sprintf("webhook URL connects to an address that is not public (%s); only public addresses are allowed", e.Class)
}

// resolveError is a failure to resolve the URL's host.
type resolveError struct {
	Host string
	Err  error
}

func (e *resolveError) Error() string {
	var dnsErr *net.DNSError
	if errors.As(e.Err, &dnsErr) && dnsErr.IsTimeout {
		return fmt.Sprintf("cannot resolve host %q: the DNS lookup timed out", e.Host)
	}
	return fmt.Sprintf("cannot resolve host %q", e.Host)
}

func (e *resolveError) Unwrap() error { return e.Err }

// dialContext connects to addr ("host:port" of the URL) through addresses
// that the Client resolved and vetted itself, so that what is dialed is
// what was checked.
func (c *Client) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("egress: invalid port %q", portText)
	}
	ips, err := c.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for i, ip := range ips {
		dialCtx, cancel := partialDeadline(ctx, len(ips)-i)
		conn, err := c.dialer.DialContext(dialCtx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		cancel()
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// partialDeadline gives one of the remaining addresses its share of the
// time left, at least two seconds, so that one address that swallows
// packets does not use up the time of those after it (as net.Dialer
// does for the addresses it resolves itself).
func partialDeadline(ctx context.Context, remaining int) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok || remaining <= 1 {
		return ctx, func() {}
	}
	share := time.Until(deadline) / time.Duration(remaining)
	if share < 2*time.Second {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, share)
}

// lookup returns the addresses of host, an IP literal or a name, or a
// *blockedError when one of them is not allowed, or a *resolveError.
// A name with any non-public address is refused as a whole.
func (c *Client) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := c.check(host, ip, true); err != nil {
			return nil, err
		}
		return []netip.Addr{ip.Unmap()}, nil
	}
	ips, err := c.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &resolveError{Host: host, Err: err}
	}
	if len(ips) == 0 {
		return nil, &resolveError{Host: host, Err: errors.New("no addresses")}
	}
	for i, ip := range ips {
		if err := c.check(host, ip, false); err != nil {
			return nil, err
		}
		ips[i] = ip.Unmap()
	}
	return ips, nil
}

// check refuses ip unless it is public or private addresses are allowed.
func (c *Client) check(host string, ip netip.Addr, literal bool) error {
	if c.allowPrivate {
		return nil
	}
	if class := addressClass(ip); class != "" {
		return &blockedError{Host: host, Addr: ip, Class: class, Literal: literal}
	}
	return nil
}

// control checks the address of a socket just before it connects: the
// last line of defence should anything hand the dialer an address that
// lookup did not vet.
func (c *Client) control(network, address string, _ syscall.RawConn) error {
	if c.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress: cannot check dialed address %q: %w", address, err)
	}
	return c.check("", ap.Addr(), false)
}
