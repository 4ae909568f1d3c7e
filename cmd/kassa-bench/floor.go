package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kassapay/kassa/cmd/kassa-bench/internal/floor"
)

// runFloor serves a floor: chi, Pebble, one synced write per request.
// With -work it also does, per request, what every invoice creation must
// do whatever the service's design: decode the request, sign one BOLT11
// request with lightning/bolt11 (the simulated node's code), make one
// on-chain address (the simulated chain's code, for a store like the
// bench store), render the two QR PNGs (the qr package), and encode the
// invoice as JSON, which is also what it writes.
func runFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	dir := fs.String("data", "", "Pebble directory")
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	work := fs.Bool("work", false, "also do the work every invoice creation requires")
	debug := fs.String("debug-listen", "", "serve Go's pprof profiles on this address (off when empty)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := pebble.Open(*dir, &pebble.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	var w *floor.Work
	if *work {
		if w, err = floor.NewWork(); err != nil {
			return err
		}
	}
	r := floor.Handler(db, w)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if *debug != "" {
		// The same profiles as kassa serve's --debug-listen, so that
		// -profile compares the two servers' CPU alike.
		dl, err := net.Listen("tcp", *debug)
		if err != nil {
			return err
		}
		defer dl.Close()
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		go http.Serve(dl, mux)
	}
	// The bench stops a floor with SIGINT: handle it, since a process
	// started from a background job inherits SIGINT ignored and would
	// never exit (the bench then waited for it forever).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv := &http.Server{Handler: r}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
