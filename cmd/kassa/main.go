// Command kassa runs the Kassa payment service and talks to a running one.
//
//	kassa serve [flags]                 run the service
//	kassa store create --name N ...     create a store, print {"storeId","apiKey"}
//	kassa sim pay INVOICE_ID [--method lightning|onchain] [--amount SATS]
//	kassa sim mine [N]
//	kassa version
//
// main only handles signals and exit codes; Main does the wiring, so that
// end-to-end tests reuse it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Version is set at build time with -ldflags "-X main.Version=…".
var Version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "kassa:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

const usage = `usage:
  kassa serve [--data DIR] [--listen ADDR] [--public-url URL] [--chain sim|rpc://…]
              [--lightning sim|lnd://…] [--rates fixed|kraken,coinbase,…]
              [--invoice-expiry 15m] [--dev] [--otlp-endpoint HOST:PORT]
  kassa store create --name NAME [--currency EUR] [--percent-fee 1] [--tolerance 0] [--xpub XPUB]
  kassa store topup STORE_ID --amount SATS
  kassa sim pay INVOICE_ID [--method lightning|onchain] [--amount SATS]
  kassa sim mine [N]
  kassa version
Admin commands reach the server named by --server (default: from --data or
http://127.0.0.1:8080) with the token in DIR/admin.token.
Every serve flag can also be set as KASSA_<NAME> (KASSA_INVOICE_EXPIRY=1m).`

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		m := NewMain()
		if err := m.ParseFlags(args[1:]); err != nil {
			return err
		}
		if err := m.Run(ctx); err != nil {
			m.Close()
			return err
		}
		<-ctx.Done()
		return m.Close()
	case "store", "sim":
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, usage)
			return errUsage
		}
		return runAdmin(ctx, args[0]+" "+args[1], args[2:], os.Stdout)
	case "version", "--version", "-v":
		fmt.Println("kassa", Version)
		return nil
	case "help", "-h", "--help":
		fmt.Println(usage)
		return nil
	}
	fmt.Fprintf(os.Stderr, "kassa: unknown command %q\n%s\n", args[0], usage)
	return errUsage
}
