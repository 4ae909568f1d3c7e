package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"net/http/pprof"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// maxDebugSeconds caps the seconds parameter of the pprof handlers: the
// CPU profile and the execution trace run that long, and the delta
// profiles (heap, allocs, block, mutex, goroutine, threadcreate) wait
// that long; a larger value is refused with 400. 30 s is the CPU
// profile's own default.
const maxDebugSeconds = 30

// allowPublicDebugFlag forces --debug-listen onto an address that is not
// loopback; allowPublicMetricsFlag forces --metrics-listen onto one that
// is neither loopback nor private.
const (
	allowPublicDebugFlag   = "debug-listen-allow-public"
	allowPublicMetricsFlag = "metrics-listen-allow-public"
)

// serveDebug starts the debug listener of --debug-listen: Go's pprof
// profiles (see debugHandler), on loopback unless
// --debug-listen-allow-public, which is logged as a warning. A failure
// to listen stops the start.
func serveDebug(ctx context.Context, c Config, log *slog.Logger) (*nethttp.Server, error) {
	addr := c.DebugListen
	bind, err := loopbackAddr(ctx, addr, net.DefaultResolver.LookupNetIP)
	switch {
	case err == nil:
		addr = bind
	case c.DebugListenAllowPublic:
		log.Warn("debug listener reachable beyond loopback: whoever reaches it reads the process's heap and goroutine profiles and can keep it profiling; firewall it",
			"addr", addr, "reason", err.Error(), "flag", "--"+allowPublicDebugFlag)
	default:
		return nil, fmt.Errorf("--debug-listen: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-listen: %w", err)
	}
	srv := &nethttp.Server{Handler: debugHandler(c.Dev), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			log.Error("debug listener", "err", err)
		}
	}()
	log.Info("debug listening", "addr", ln.Addr().String())
	return srv, nil
}

// loopbackAddr checks that addr, HOST:PORT, listens on loopback alone and
// returns the address to bind: addr itself for an IP address, and for a
// name the loopback address it resolves to (IPv4 first, as net.Listen
// picks), so that the name is not resolved again, perhaps elsewhere, when
// the listener binds. A name passes only when every address it resolves
// to is loopback. Each error names the flag that forces another address.
func loopbackAddr(ctx context.Context, addr string, lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)) (string, error) {
	return debugScope.check(ctx, addr, lookup)
}

// listenScope is where an unauthenticated admin listener may listen:
// the addresses ok admits, described as what; serves and flag complete
// the refusal.
type listenScope struct {
	ok     func(netip.Addr) bool
	what   string // "loopback", "loopback or private"
	serves string // what a stranger would read
	flag   string // the flag that forces another address
}

var (
	debugScope = listenScope{
		ok:     netip.Addr.IsLoopback,
		what:   "loopback",
		serves: "the debug listener serves the process's profiles and must not reach the network",
		flag:   allowPublicDebugFlag,
	}
	metricsScope = listenScope{
		ok:     func(ip netip.Addr) bool { return ip.IsLoopback() || ip.IsPrivate() },
		what:   "loopback or private",
		serves: "the metrics listener has no authentication and must not reach the internet",
		flag:   allowPublicMetricsFlag,
	}
)

// check is loopbackAddr for the scope s.
func (s listenScope) check(ctx context.Context, addr string, lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)) (string, error) {
	refuse := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%q %s: %s; "+
			"use a %s address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT), or --%s to serve it there on purpose",
			addr, fmt.Sprintf(format, args...), s.serves, s.what, s.flag)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return refuse("is not HOST:PORT")
	}
	if host == "" {
		return refuse("has no host, so it listens on every interface")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		switch {
		case ip.Unmap().IsUnspecified():
			return refuse("listens on every interface")
		case !s.ok(ip.Unmap()):
			return refuse("is not a %s address", s.what)
		}
		return addr, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := lookup(ctx, "ip", host)
	if err != nil {
		return refuse("does not resolve (%v)", err)
	}
	if len(ips) == 0 {
		return refuse("resolves to no address")
	}
	var off []string
	for _, ip := range ips {
		if !s.ok(ip.Unmap()) {
			off = append(off, ip.String())
		}
	}
	if len(off) > 0 {
		all := make([]string, len(ips))
		for i, ip := range ips {
			all[i] = ip.String()
		}
		return refuse("resolves to %s, not %s alone", strings.Join(all, ", "), s.what)
	}
	bind := ips[0]
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			bind = ip
			break
		}
	}
	return net.JoinHostPort(bind.Unmap().String(), port), nil
}

// debugHandler serves Go's pprof profiles under /debug/pprof/ (GET only),
// every seconds parameter capped at maxDebugSeconds; with dev also POST
// /debug/free-os-memory. The command line (/debug/pprof/cmdline) is not
// served: it may hold secrets given as flags.
func debugHandler(dev bool) nethttp.Handler {
	mux := nethttp.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	if dev {
		// For kassa-bench: a collection that gives every free page
		// back to the OS, so that the resident set it reads next is
		// what the process holds, not the collector's slack.
		mux.HandleFunc("POST /debug/free-os-memory", func(w nethttp.ResponseWriter, _ *nethttp.Request) {
			debug.FreeOSMemory()
			w.WriteHeader(nethttp.StatusNoContent)
		})
	}
	return capSeconds(mux)
}

// capSeconds refuses with 400 a request whose seconds parameter is not a
// number above 0 and at most maxDebugSeconds. The pprof handlers read it
// with FormValue, which also reads a form or multipart body; every value
// of every source is checked, so that no spelling the handlers read gets
// past (the first value is the one they use).
func capSeconds(next nethttp.Handler) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, nethttp.ErrNotMultipart) {
			nethttp.Error(w, "bad form: "+err.Error(), nethttp.StatusBadRequest)
			return
		}
		for _, v := range r.Form["seconds"] {
			s, err := strconv.ParseFloat(v, 64)
			if err != nil || !(s > 0 && s <= maxDebugSeconds) {
				nethttp.Error(w, fmt.Sprintf("seconds: want a number of seconds above 0 and at most %d", maxDebugSeconds), nethttp.StatusBadRequest)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
