package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// adminClient calls the admin API of a running server.
type adminClient struct {
	server string
	// from says where the server's address came from, and tokenFile
	// which file the token was read from, for the errors.
	from, tokenFile string
	token           string
	http            *nethttp.Client
}

func newAdminClient(server, data string) (*adminClient, error) {
	if data == "" {
		data = "./data"
	}
	tokenFile := filepath.Join(data, "admin.token")
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("read admin token (is the server running with --data %s?): %w", data, err)
	}
	from := "--server"
	if server == "" {
		server, from = os.Getenv("KASSA_SERVER"), "KASSA_SERVER"
	}
	if server == "" {
		listen, ok := os.LookupEnv("KASSA_LISTEN")
		from = "KASSA_LISTEN"
		if !ok || listen == "" {
			listen, from = DefaultConfig().Listen, "the default address"
		}
		server = "http://" + listen
	}
	return &adminClient{server: strings.TrimRight(server, "/"), from: from, tokenFile: tokenFile,
		token: strings.TrimSpace(string(token)), http: &nethttp.Client{Timeout: 30 * time.Second}}, nil
}

// call sends method path with body (nil: none) and returns the answer.
func (c *adminClient) call(ctx context.Context, method, path string, body any) (json.RawMessage, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(data)
	}
	req, err := nethttp.NewRequestWithContext(ctx, method, c.server+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach server %s (from %s): %w; is it running? Name the server with --server URL (or KASSA_SERVER)", c.server, c.from, err)
	}
	defer res.Body.Close()
	// A store list is the only large answer: a few hundred bytes a store.
	out, err := io.ReadAll(io.LimitReader(res.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if res.StatusCode == nethttp.StatusUnauthorized {
		return nil, fmt.Errorf("server %s (from %s) answered 401: it refused the admin token of %s, so it is not the server that keeps its data there; "+
			"name the server started with that --data by --server URL (or KASSA_SERVER), or pass the --data of the server at %s", c.server, c.from, c.tokenFile, c.server)
	}
	if res.StatusCode/100 != 2 {
		var e struct{ Message string }
		if json.Unmarshal(out, &e) == nil && e.Message != "" {
			return nil, fmt.Errorf("server answered %d: %s", res.StatusCode, e.Message)
		}
		return nil, fmt.Errorf("server answered %d: %s", res.StatusCode, bytes.TrimSpace(out))
	}
	return out, nil
}

// adminFlags are the flags of every admin command; each command
// declares the ones it takes.
type adminFlags struct {
	server, data                                        string
	name, currency, percentFee, tolerance, xpub, method string
	xpubType                                            string
	ratePrimary, rateFallback                           string
	lightningAddress                                    string
	logoURL, brandColor                                 string
	amount                                              int64
	reference                                           string
	confirmations                                       int
	forwardFeePercent                                   string
	forwardFeeMax                                       int64
}

// adminCommand is one `kassa store …` or `kassa sim …` command.
type adminCommand struct {
	name    string // "store create"
	args    string // positional arguments and flags, for the usage line
	summary string
	flags   func(fs *flag.FlagSet, f *adminFlags)
	run     func(ctx context.Context, c *adminClient, f *adminFlags, rest []string, stdout io.Writer) error
}

// adminGroups are the command groups and their commands, in the order
// help lists them.
var adminGroups = map[string][]adminCommand{
	"store": {
		{
			name: "store create", args: "--name NAME [--currency EUR] [--percent-fee 1] [--tolerance 0] [--xpub XPUB [--xpub-type segwit|taproot]] [--confirmations 1] [--lightning-address user@domain [--forward-fee-percent 1] [--forward-fee-max 5000]] [--logo-url data:image/png;base64,…] [--brand-color #rrggbb]",
			summary: `create a store; prints {"storeId","apiKey"}`,
			flags: func(fs *flag.FlagSet, f *adminFlags) {
				fs.StringVar(&f.name, "name", "", "store name (required)")
				fs.StringVar(&f.currency, "currency", "EUR", "store currency")
				fs.StringVar(&f.percentFee, "percent-fee", "1", "service fee in percent per settled invoice")
				fs.StringVar(&f.tolerance, "tolerance", "0", "underpayment tolerance in percent")
				fs.StringVar(&f.xpub, "xpub", "", "account extended public key for on-chain addresses (BIP84 xpub/zpub; tpub/vpub on test networks)")
				fs.StringVar(&f.xpubType, "xpub-type", "segwit", "addresses derived from --xpub: segwit (BIP84) or taproot (BIP86)")
				fs.IntVar(&f.confirmations, "confirmations", 1, "confirmations an on-chain payment needs")
				fs.StringVar(&f.ratePrimary, "rate-primary", "", "preferred exchange rate provider (default: median of all)")
				fs.StringVar(&f.rateFallback, "rate-fallback", "", "rate provider used when the primary has no fresh rate")
				fs.StringVar(&f.lightningAddress, "lightning-address", "", "Lightning address (user@domain) the store's Lightning payments are forwarded to")
				fs.StringVar(&f.forwardFeePercent, "forward-fee-percent", "", "routing fee a forward to the Lightning address may spend, in percent of its amount (default 1)")
				fs.Int64Var(&f.forwardFeeMax, "forward-fee-max", 0, "most routing fee one forward may spend, in satoshis (default 5000)")
				fs.StringVar(&f.logoURL, "logo-url", "", "logo on the checkout pages, as a data:image/png;base64 URI (at most 48 KiB)")
				fs.StringVar(&f.brandColor, "brand-color", "", "accent colour of the checkout pages, #rrggbb")
			},
			run: func(ctx context.Context, c *adminClient, f *adminFlags, rest []string, stdout io.Writer) error {
				if f.name == "" || len(rest) > 0 {
					return errBadArgs
				}
				return printJSON(stdout)(c.call(ctx, "POST", "/admin/v1/stores", map[string]any{
					"name": f.name, "currency": f.currency, "percentFee": json.Number(f.percentFee),
					"tolerance": json.Number(f.tolerance), "xpub": f.xpub, "xpubType": f.xpubType, "confirmations": f.confirmations,
					"ratePrimary": f.ratePrimary, "rateFallback": f.rateFallback, "lightningAddress": f.lightningAddress,
					"forwardFeePercent": optionalNumber(f.forwardFeePercent), "forwardFeeMax": f.forwardFeeMax,
					"logoUrl": f.logoURL, "brandColor": f.brandColor,
				}))
			},
		},
		{
			name: "store list", summary: `list the stores, one JSON line each: {"storeId","name","currency","balance","createdAt"}`,
			run: func(ctx context.Context, c *adminClient, f *adminFlags, rest []string, stdout io.Writer) error {
				if len(rest) > 0 {
					return errBadArgs
				}
				out, err := c.call(ctx, "GET", "/admin/v1/stores", nil)
				if err != nil {
					return err
				}
				var stores []json.RawMessage
				if err := json.Unmarshal(out, &stores); err != nil {
					return fmt.Errorf("server answered a store list that is not JSON: %w", err)
				}
				for _, st := range stores {
					if err := printJSON(stdout)(st, nil); err != nil {
						return err
					}
				}
				return nil
			},
		},
		{
			name: "store topup", args: "STORE_ID --amount SATS [--reference REF]", summary: "credit the store's prepaid balance",
			flags: func(fs *flag.FlagSet, f *adminFlags) {
				fs.Int64Var(&f.amount, "amount", 0, "satoshis to credit to the prepaid balance (required)")
				fs.StringVar(&f.reference, "reference", "", "names the payment credited: a top-up with a reference already credited changes nothing (safe to retry)")
			},
			run: func(ctx context.Context, c *adminClient, f *adminFlags, rest []string, stdout io.Writer) error {
				if len(rest) != 1 || f.amount <= 0 {
					return errBadArgs
				}
				body := map[string]any{"amount": f.amount}
				if f.reference != "" {
					body["reference"] = f.reference
				}
				return printJSON(stdout)(c.call(ctx, "POST", "/admin/v1/stores/"+rest[0]+"/topup", body))
			},
		},
	},
	"sim": {
		{
			name: "sim pay", args: "INVOICE_ID [--method lightning|onchain] [--amount SATS]",
			summary: "simulation only: pay an invoice",
			flags: func(fs *flag.FlagSet, f *adminFlags) {
				fs.StringVar(&f.method, "method", "lightning", "lightning or onchain")
				fs.Int64Var(&f.amount, "amount", 0, "satoshis to pay (default: the amount due)")
			},
			run: func(ctx context.Context, c *adminClient, f *adminFlags, rest []string, stdout io.Writer) error {
				if len(rest) != 1 {
					return errBadArgs
				}
				body := map[string]any{"invoiceId": rest[0], "method": f.method}
				if f.amount > 0 {
					body["amount"] = f.amount
				}
				return printJSON(stdout)(c.call(ctx, "POST", "/admin/v1/sim/pay", body))
			},
		},
		{
			name: "sim mine", args: "[N]", summary: "simulation only: mine N blocks (default 1, at most 1000)",
			run: func(ctx context.Context, c *adminClient, f *adminFlags, rest []string, stdout io.Writer) error {
				blocks := 1
				if len(rest) > 1 {
					return errBadArgs
				}
				if len(rest) == 1 {
					var err error
					if blocks, err = strconv.Atoi(rest[0]); err != nil || blocks < 1 || blocks > 1000 {
						return fmt.Errorf("sim mine: N must be a number from 1 to 1000")
					}
				}
				return printJSON(stdout)(c.call(ctx, "POST", "/admin/v1/sim/mine", map[string]any{"blocks": blocks}))
			},
		},
	},
}

// errBadArgs says a command got the wrong arguments; its usage follows.
var errBadArgs = errors.New("bad arguments")

// printJSON returns a function that prints an answer compacted on one
// line, or returns the call's error.
func printJSON(stdout io.Writer) func(json.RawMessage, error) error {
	return func(out json.RawMessage, err error) error {
		if err != nil {
			return err
		}
		var compact bytes.Buffer
		if json.Compact(&compact, out) != nil {
			compact.Reset()
			compact.Write(bytes.TrimSpace(out))
		}
		_, err = fmt.Fprintln(stdout, compact.String())
		return err
	}
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// groupUsage is the help of one command group.
func groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: kassa %s COMMAND [flags]\n\ncommands:\n", group)
	for _, cmd := range adminGroups[group] {
		fmt.Fprintf(&b, "  kassa %s %s\n      %s\n", cmd.name, cmd.args, cmd.summary)
	}
	b.WriteString("\n" + adminNote + "\nkassa " + group + " COMMAND --help shows a command's flags.")
	return b.String()
}

// adminNote says how admin commands find the server.
const adminNote = `Admin commands reach the server named by --server (default: KASSA_SERVER, or
http://127.0.0.1:8080) with the token in DIR/admin.token (--data DIR, default:
KASSA_DATA, or ./data).`

// runAdmin runs `kassa store …` and `kassa sim …`: args[0] is the group.
func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	group := args[0]
	if len(args) < 2 {
		fmt.Fprintln(stderr, groupUsage(group))
		return errUsage
	}
	if isHelp(args[1]) {
		fmt.Fprintln(stdout, groupUsage(group))
		return nil
	}
	var cmd *adminCommand
	for i := range adminGroups[group] {
		if adminGroups[group][i].name == group+" "+args[1] {
			cmd = &adminGroups[group][i]
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "kassa: unknown command %q\n%s\n", group+" "+args[1], groupUsage(group))
		return errUsage
	}
	var f adminFlags
	fs := flag.NewFlagSet("kassa "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.server, "server", "", "URL of the running server (default KASSA_SERVER or http://127.0.0.1:8080)")
	fs.StringVar(&f.data, "data", os.Getenv("KASSA_DATA"), "data directory of the server, for admin.token (default ./data)")
	if cmd.flags != nil {
		cmd.flags(fs, &f)
	}
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "usage: kassa %s %s\n  %s\n\nflags:\n", cmd.name, cmd.args, cmd.summary)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	rest, err := parseFlags(fs, args[2:], usage, stdout, stderr)
	if err != nil {
		return err
	}
	c, err := newAdminClient(f.server, f.data)
	if err != nil {
		return err
	}
	if err := cmd.run(ctx, c, &f, rest, stdout); errors.Is(err, errBadArgs) {
		usage(stderr)
		return errUsage
	} else if err != nil {
		return err
	}
	return nil
}

// errHelpShown says help was asked for and printed: the command exits 0.
var errHelpShown = errors.New("help shown")

// parseFlags parses flags and positional arguments in any order. Asked
// for help, it prints usage to stdout and returns errHelpShown; on a bad
// flag it prints the flag package's one line naming the flag (and its
// value) and where the help is to stderr, as the go tool does, and
// returns errUsage.
func parseFlags(fs *flag.FlagSet, args []string, usage func(io.Writer), stdout, stderr io.Writer) ([]string, error) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	rest, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		return nil, errHelpShown
	case err != nil:
		fmt.Fprintf(stderr, "run %s -h for help\n", fs.Name())
		return nil, errUsage
	}
	return rest, nil
}

// optionalNumber sends a number flag left empty as absent (null), so the
// server takes its default.
func optionalNumber(s string) any {
	if s == "" {
		return nil
	}
	return json.Number(s)
}
