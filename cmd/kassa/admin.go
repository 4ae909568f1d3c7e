package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	token  string
	http   *nethttp.Client
}

func newAdminClient(server, data string) (*adminClient, error) {
	if data == "" {
		data = "./data"
	}
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		return nil, fmt.Errorf("read admin token (is the server running with --data %s?): %w", data, err)
	}
	if server == "" {
		server = os.Getenv("KASSA_SERVER")
	}
	if server == "" {
		listen := os.Getenv("KASSA_LISTEN")
		if listen == "" {
			listen = DefaultConfig().Listen
		}
		server = "http://" + listen
	}
	return &adminClient{server: strings.TrimRight(server, "/"), token: strings.TrimSpace(string(token)), http: &nethttp.Client{Timeout: 30 * time.Second}}, nil
}

func (c *adminClient) post(ctx context.Context, path string, body any) (json.RawMessage, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := nethttp.NewRequestWithContext(ctx, "POST", c.server+path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach server %s: %w", c.server, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, err
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

// runAdmin runs `kassa store …` and `kassa sim …`.
func runAdmin(ctx context.Context, cmd string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kassa "+cmd, flag.ContinueOnError)
	server := fs.String("server", "", "URL of the running server (default http://127.0.0.1:8080 or KASSA_SERVER)")
	data := fs.String("data", os.Getenv("KASSA_DATA"), "data directory of the server, for admin.token (default ./data)")
	var (
		name, currency, percentFee, tolerance, xpub, method string
		ratePrimary, rateFallback                           string
		amount                                              int64
		confirmations                                       int
	)
	switch cmd {
	case "store create":
		fs.StringVar(&name, "name", "", "store name (required)")
		fs.StringVar(&currency, "currency", "EUR", "store currency")
		fs.StringVar(&percentFee, "percent-fee", "1", "service fee in percent per settled invoice")
		fs.StringVar(&tolerance, "tolerance", "0", "underpayment tolerance in percent")
		fs.StringVar(&xpub, "xpub", "", "extended public key for on-chain addresses (BIP84)")
		fs.IntVar(&confirmations, "confirmations", 1, "confirmations an on-chain payment needs")
		fs.StringVar(&ratePrimary, "rate-primary", "", "preferred exchange rate provider (default: median of all)")
		fs.StringVar(&rateFallback, "rate-fallback", "", "rate provider used when the primary has no fresh rate")
	case "store topup":
		fs.Int64Var(&amount, "amount", 0, "satoshis to credit to the prepaid balance")
	case "sim pay":
		fs.StringVar(&method, "method", "lightning", "lightning or onchain")
		fs.Int64Var(&amount, "amount", 0, "satoshis to pay (default: the amount due)")
	case "sim mine":
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return errUsage
	}
	c, err := newAdminClient(*server, *data)
	if err != nil {
		return err
	}
	var out json.RawMessage
	switch cmd {
	case "store create":
		if name == "" || len(rest) > 0 {
			return fmt.Errorf("usage: kassa store create --name NAME [--currency EUR] [--percent-fee 1] [--tolerance 0] [--xpub XPUB]")
		}
		out, err = c.post(ctx, "/admin/v1/stores", map[string]any{
			"name": name, "currency": currency, "percentFee": json.Number(percentFee),
			"tolerance": json.Number(tolerance), "xpub": xpub, "confirmations": confirmations,
			"ratePrimary": ratePrimary, "rateFallback": rateFallback,
		})
	case "store topup":
		if len(rest) != 1 || amount <= 0 {
			return fmt.Errorf("usage: kassa store topup STORE_ID --amount SATS")
		}
		out, err = c.post(ctx, "/admin/v1/stores/"+rest[0]+"/topup", map[string]any{"amount": amount})
	case "sim pay":
		if len(rest) != 1 {
			return fmt.Errorf("usage: kassa sim pay INVOICE_ID [--method lightning|onchain] [--amount SATS]")
		}
		body := map[string]any{"invoiceId": rest[0], "method": method}
		if amount > 0 {
			body["amount"] = amount
		}
		out, err = c.post(ctx, "/admin/v1/sim/pay", body)
	case "sim mine":
		blocks := 1
		if len(rest) > 1 {
			return fmt.Errorf("usage: kassa sim mine [N]")
		}
		if len(rest) == 1 {
			if blocks, err = strconv.Atoi(rest[0]); err != nil || blocks < 1 || blocks > 1000 {
				return fmt.Errorf("sim mine: N must be a number from 1 to 1000")
			}
		}
		out, err = c.post(ctx, "/admin/v1/sim/mine", map[string]any{"blocks": blocks})
	}
	if err != nil {
		return err
	}
	var compact bytes.Buffer
	if json.Compact(&compact, out) != nil {
		compact.Reset()
		compact.Write(bytes.TrimSpace(out))
	}
	fmt.Fprintln(stdout, compact.String())
	return nil
}
