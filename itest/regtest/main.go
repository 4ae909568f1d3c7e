// Command regtest (`make regtest`) starts a btcd in regtest on loopback,
// mines spendable coins to a test wallet, runs `kassa serve` against it
// with a store whose xpub is fixed, and then reads commands from stdin to
// pay invoices and mine blocks:
//
//	pay ADDRESS SATS   pay with a signed P2WPKH transaction
//	mine [N]           mine N blocks (default 1)
//	quit               stop everything
//
// Everything lives in a temporary directory: a regtest btcd starts with
// an empty chain, so the Kassa data of an earlier run would not match it.
package main

import (
	"bufio"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa/kassatest/harness"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address Kassa listens on")
	flag.Parse()
	p := &harness.Process{}
	code := 0
	func() {
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintln(os.Stderr, "regtest:", r)
				code = 1
			}
		}()
		run(p, *listen)
	}()
	p.Close()
	os.Exit(code)
}

func run(p *harness.Process, listen string) {
	params := &chaincfg.RegressionNetParams
	secret := sha256.Sum256([]byte("kassa regtest wallet"))
	w := harness.WalletFromKey(p, secret[:], params)
	fmt.Fprintln(os.Stderr, "starting btcd (building it first if needed)…")
	node := harness.StartNode(p, harness.NodeConfig{MiningAddr: w.Address()})
	node.Mine(110)

	seed := sha256.Sum256([]byte("kassa regtest store"))
	master, err := hdkeychain.NewMaster(seed[:], params)
	if err != nil {
		p.Fatalf("%v", err)
	}
	xpub, err := master.Neuter()
	if err != nil {
		p.Fatalf("%v", err)
	}
	fmt.Fprintln(os.Stderr, "starting kassa…")
	k := harness.StartKassa(p, "", "--chain", node.URL(), "--listen", listen)
	store := k.CreateStore("--name", "Regtest shop", "--xpub", xpub.String(), "--confirmations", "1")

	fmt.Printf(`
Kassa    %s   (data %s)
btcd     %s   height %d
--chain  %s
store    %s
apiKey   %s

Create an invoice:
  curl -s -H 'Authorization: token %s' -H 'Content-Type: application/json' \
    -d '{"amount":50000,"currency":"SATS","enabledPaymentMethods":["BTC"]}' \
    %s/api/v1/stores/%s/invoices
Then here:  pay ADDRESS SATS  |  mine [N]  |  quit
`, k.URL, k.Data, node.RPCAddr, node.Height(), node.URL(), store.StoreID, store.APIKey, store.APIKey, k.URL, store.StoreID)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		fmt.Print("> ")
		select {
		case <-stop:
			return
		case line, ok := <-lines:
			if !ok {
				<-stop // stdin closed (e.g. run in the background): wait for a signal
				return
			}
			if !command(p, w, node, strings.Fields(line)) {
				return
			}
		}
	}
}

// command runs one line; false means quit.
func command(p *harness.Process, w *harness.Wallet, node *harness.Node, f []string) (more bool) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Println("error:", r)
			more = true
		}
	}()
	switch {
	case len(f) == 0:
	case f[0] == "quit" || f[0] == "exit":
		return false
	case f[0] == "pay" && len(f) == 3:
		sats, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || sats <= 0 {
			fmt.Println("pay ADDRESS SATS")
			return true
		}
		tx := w.Pay(p, node, harness.Output{Address: f[1], Amount: sats})
		fmt.Println("sent", tx.TxHash())
	case f[0] == "mine":
		n := 1
		if len(f) > 1 {
			if v, err := strconv.Atoi(f[1]); err == nil && v > 0 && v <= 1000 {
				n = v
			}
		}
		node.Mine(n)
		fmt.Println("height", node.Height())
	default:
		fmt.Println("pay ADDRESS SATS | mine [N] | quit")
	}
	return true
}
