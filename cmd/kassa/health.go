package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"strings"
	"time"
)

const healthUsage = `usage: kassa health [--server URL]
  ask the running server for GET /api/v1/health: exit 0 when it answers
  200, 1 otherwise. For container health checks (the distroless image
  has no curl); needs no token.`

// runHealth is `kassa health`.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("kassa health", flag.ContinueOnError)
	server := fset.String("server", "", "server URL (default $KASSA_SERVER, else http://$KASSA_LISTEN or the default listen address)")
	rest, err := parseFlags(fset, args, func(w io.Writer) {
		fmt.Fprintln(w, healthUsage+"\n\nflags:")
		fset.SetOutput(w)
		fset.PrintDefaults()
	}, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fmt.Fprintln(stderr, healthUsage)
		return errUsage
	}
	url := *server
	if url == "" {
		url = os.Getenv("KASSA_SERVER")
	}
	if url == "" {
		listen := os.Getenv("KASSA_LISTEN")
		if listen == "" {
			listen = DefaultConfig().Listen
		}
		url = "http://" + listen
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := nethttp.NewRequestWithContext(ctx, "GET", strings.TrimRight(url, "/")+"/api/v1/health", nil)
	if err != nil {
		return err
	}
	res, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	stdout.Write(body)
	if res.StatusCode != nethttp.StatusOK {
		return fmt.Errorf("health: the server answered %d", res.StatusCode)
	}
	return nil
}
