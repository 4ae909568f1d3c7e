// Command kassa runs the Kassa payment service and talks to a running one.
//
//	kassa serve [flags]                 run the service
//	kassa store create --name N ...     create a store, print {"storeId","apiKey"}
//	kassa store list                    list the stores, one JSON line each
//	kassa store topup STORE_ID --amount SATS [--reference REF]
//	kassa sim pay INVOICE_ID [--method lightning|onchain] [--amount SATS]
//	kassa sim mine [N]
//	kassa config check [--config FILE]  validate and print the configuration
//	kassa backup DIR                    copy the running service's data to DIR
//	kassa restore DIR --data NEWDIR     make a data directory from a backup
//	kassa user create --email E --password-file F [--admin]   a dashboard account
//	kassa user password EMAIL --password-file F                reset its password
//	kassa cluster certs DIR --nodes N [--host HOST]...          cluster CA and node certificates
//	kassa version
//
// main only handles signals and exit codes; Main does the wiring, so that
// end-to-end tests reuse it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Version is set at build time with -ldflags "-X main.Version=…".
var Version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal starts a graceful stop (--shutdown-timeout);
		// from then on a second one ends the process at once.
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "kassa:", err)
		os.Exit(1)
	}
}

// errUsage says the command line was wrong; usage went to stderr and
// the process exits 2.
var errUsage = errors.New("usage")

const usage = `usage:
  kassa serve [flags]           run the service (kassa serve --help lists the flags)
  kassa store create --name NAME [--currency EUR] [--percent-fee 1] [--tolerance 0] [--xpub XPUB]
  kassa store list
  kassa store topup STORE_ID --amount SATS [--reference REF]
  kassa sim pay INVOICE_ID [--method lightning|onchain] [--amount SATS]
  kassa sim mine [N]
  kassa config check [--config FILE] [serve flags]
  kassa backup DIR              copy the running service's data (a consistent snapshot) to DIR
  kassa restore DIR --data NEWDIR
  kassa user create --email EMAIL --password-file FILE [--admin]
  kassa user password EMAIL --password-file FILE
  kassa health [--server URL]   exit 0 when the server answers its health check
  kassa cluster certs DIR --nodes N [--host HOST]...   a cluster CA and node certificates
  kassa version
kassa COMMAND --help (kassa store --help, kassa sim pay --help) says more.
` + adminNote + `
Every serve flag can also be set as KASSA_<NAME> (KASSA_INVOICE_EXPIRY=1m)
or in the YAML file of --config (invoice-expiry: 1m); flags win over
variables, variables over the file.`

func run(ctx context.Context, args []string) error {
	err := dispatch(ctx, args, os.Stdout, os.Stderr)
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		m := NewMain()
		m.Stdout, m.Stderr = stdout, stderr
		if err := m.ParseFlags(args[1:]); err != nil {
			return err
		}
		if err := m.Run(ctx); err != nil {
			m.closeBounded()
			return err
		}
		if err := m.Wait(ctx); err != nil {
			m.closeBounded()
			return err
		}
		return m.closeBounded()
	case "store", "sim", "user":
		return runAdmin(ctx, args, stdout, stderr)
	case "config":
		return runConfig(args[1:], stdout, stderr)
	case "backup":
		return runBackup(ctx, args[1:], stdout, stderr)
	case "restore":
		return runRestore(args[1:], stdout, stderr)
	case "health":
		return runHealth(ctx, args[1:], stdout, stderr)
	case "cluster":
		return runCluster(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "kassa", Version)
		return nil
	case "help", "-h", "--help", "-help":
		if len(args) > 1 && args[0] == "help" {
			// kassa help store is kassa store --help.
			return dispatch(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "kassa: unknown command %q\n%s\n", args[0], usage)
	return errUsage
}
