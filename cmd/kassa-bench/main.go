// Command kassa-bench measures Kassa against a floor measured in the same
// run and prints each figure as `BENCH <name> <value> <unit>`.
//
// The floor is the same chi router and Pebble with one synced write per
// request and nothing else; Kassa is the real `kassa serve` binary with
// durable writes. Both run as separate processes on loopback and are
// driven by the same load generator: a closed loop at fixed concurrency
// for the peak rate, then an open loop at half the peak rate for latency.
//
// Beside the bare floor, a work floor does in the same process shape what
// every invoice creation must do (sign a BOLT11 request, make an address,
// draw two QR codes, encode the JSON): invoice_create_vs_work_floor is
// Kassa's own overhead. The memory figures run the real binary too: its
// resident memory after creating and closing many invoices, and the time
// and memory of a restart with many open invoices. The Lightning figures
// run on real lnd nodes (lightning.go). The cluster figures (cluster.go)
// run a one-node cluster over PostgreSQL and etcd against the single node
// on Pebble, and time a failover in a three-node cluster.
//
//	kassa-bench [-duration 5s] [-rounds 3] [-concurrency 32] [-endpoints 1000] [-open-invoices 100000]
//	            [-closed-invoices 1000000] [-restart-invoices 200000] [-chain-payments 20] [-ln-payments 30] [-only PART]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "floor" {
		if err := runFloor(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		return
	}
	duration := flag.Duration("duration", 5*time.Second, "length of each measured phase")
	concurrency := flag.Int("concurrency", 32, "requests in flight in the closed loop")
	openInvoices := flag.Int("open-invoices", 100_000, "open invoice actors for the memory figure")
	endpoints := flag.Int("endpoints", 1000, "webhook endpoints for the fan-out figure")
	rounds := flag.Int("rounds", 3, "turns of floor, work floor and kassa in the create figure")
	closed := flag.Int("closed-invoices", 1_000_000, "invoices created and closed for the resident-memory figure")
	restart := flag.Int("restart-invoices", 200_000, "open invoices for the restart figures")
	only := flag.String("only", "", "run only this part: create, tracing, memory, webhooks, closed, restart, chain, lightning or cluster")
	lnPayments := flag.Int("ln-payments", 30, "payments on real lnd for ln_settle_to_webhook_p99_ms")
	chainPayments := flag.Int("chain-payments", 20, "payments on a real btcd for chain_block_to_settled_ms")
	flag.Parse()
	ctx := context.Background()
	if *only == "" || *only == "create" {
		if err := benchCreate(ctx, *duration, *concurrency, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "kassa-bench:", err)
			os.Exit(1)
		}
	}
	if *only == "" || *only == "tracing" {
		if err := benchTracing(*duration, *concurrency, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "kassa-bench:", err)
			os.Exit(1)
		}
	}
	if *only == "" || *only == "webhooks" {
		if err := benchWebhooks(ctx, *endpoints); err != nil {
			fmt.Fprintln(os.Stderr, "kassa-bench:", err)
			os.Exit(1)
		}
	}
	if *only == "" || *only == "closed" {
		if err := benchClosed(ctx, *closed, *concurrency); err != nil {
			fmt.Fprintln(os.Stderr, "kassa-bench:", err)
			os.Exit(1)
		}
	}
	if *only == "" || *only == "restart" {
		if err := benchRestart(ctx, *restart, *concurrency); err != nil {
			fmt.Fprintln(os.Stderr, "kassa-bench:", err)
			os.Exit(1)
		}
	}
	if *only == "" || *only == "chain" {
		if err := benchChain(ctx, *chainPayments); err != nil {
			fmt.Fprintln(os.Stderr, "kassa-bench:", err)
			os.Exit(1)
		}
	}
	if *only == "" || *only == "cluster" {
		if err := benchCluster(ctx, *duration, *concurrency); err != nil {
			fmt.Fprintln(os.Stderr, "kassa-bench:", err)
			os.Exit(1)
		}
	}
	if *only == "" || *only == "lightning" {
		if err := benchLightning(*duration, *concurrency, *rounds, *lnPayments); err != nil {
			fmt.Fprintln(os.Stderr, "kassa-bench:", err)
			os.Exit(1)
		}
	}
	if *only == "" || *only == "memory" {
		if err := benchMemory(ctx, *openInvoices); err != nil {
			fmt.Fprintln(os.Stderr, "kassa-bench:", err)
			os.Exit(1)
		}
	}
}

func bench(name string, value float64, unit string) {
	fmt.Printf("BENCH %s %.4g %s\n", name, value, unit)
}
