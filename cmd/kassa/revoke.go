package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kassapay/kassa/internal/nodetls"
)

// revokedPrefix is where the cluster's revoked node certificates live in
// etcd: one key per certificate, revokedPrefix + its serial number
// (nodetls.SerialKey), whose value says what was revoked and when.
const revokedPrefix = etcdBase + "/revoked/"

// revokedEntry is the value of a revoked certificate's key: for the
// operator who reads etcd; the key alone revokes.
type revokedEntry struct {
	Subject   string    `json:"subject,omitempty"`
	RevokedAt time.Time `json:"revoked_at"`
}

// loadRevocations reads the revoked certificates into r, and returns the
// revision read at.
func loadRevocations(ctx context.Context, client *clientv3.Client, r *nodetls.Revocations) (int64, error) {
	res, err := client.Get(ctx, revokedPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	serials := make([]string, 0, len(res.Kvs))
	for _, kv := range res.Kvs {
		serials = append(serials, strings.TrimPrefix(string(kv.Key), revokedPrefix))
	}
	r.Set(serials)
	return res.Header.Revision, nil
}

// followRevocations reads the revoked certificates into r once (a node
// that cannot read the list does not start: it would take a revoked
// node's connections), then keeps r up to date by a watch until ctx ends.
// Each change reads the whole list again: it is short, and a read after
// the watch broke (etcd away, compaction) is the same step. While etcd
// is away the last list holds.
func followRevocations(ctx, runCtx context.Context, client *clientv3.Client, r *nodetls.Revocations, log *slog.Logger) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	rev, err := loadRevocations(rctx, client, r)
	cancel()
	if err != nil {
		return fmt.Errorf("--cluster: read the revoked node certificates from etcd: %w", err)
	}
	go func() {
		defer client.Close()
		for runCtx.Err() == nil {
			for w := range client.Watch(runCtx, revokedPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithKeysOnly()) {
				if w.Err() != nil {
					break
				}
				if len(w.Events) == 0 {
					continue
				}
				before := w.Header.Revision
				if next, err := loadRevocations(runCtx, client, r); err == nil {
					rev = next
				} else {
					rev = before
				}
				log.Warn("the cluster's revoked node certificates changed", "revision", rev)
			}
			select {
			case <-runCtx.Done():
			case <-time.After(time.Second):
			}
			if next, err := loadRevocations(runCtx, client, r); err == nil {
				rev = next
			}
		}
	}()
	return nil
}

const revokeUsage = `usage: kassa cluster revoke --cluster 'etcd://HOST:PORT[?ca=…&cert=…&key=…]' (--cert FILE | --serial HEX)
  revoke one node certificate: every node of the cluster refuses it in
  the node port's handshake from then on, both ways, and closes the
  connections it opened, without a new cluster CA. --cert names the
  certificate file; --serial its serial number in hex (openssl x509
  -noout -serial -in FILE prints it).`

// runRevoke is `kassa cluster revoke`.
func runRevoke(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kassa cluster revoke", flag.ContinueOnError)
	cluster := fs.String("cluster", "", "the cluster's etcd, as kassa serve --cluster takes it")
	certFile := fs.String("cert", "", "the node certificate to revoke (PEM file)")
	serialText := fs.String("serial", "", "the serial number, in hex, of the node certificate to revoke")
	rest, err := parseFlags(fs, args, func(w io.Writer) {
		fmt.Fprintln(w, revokeUsage+"\n\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 0 || *cluster == "" || (*certFile == "") == (*serialText == "") {
		fmt.Fprintln(stderr, revokeUsage)
		return errUsage
	}
	entry := revokedEntry{RevokedAt: time.Now().UTC()}
	var serial string
	if *certFile != "" {
		data, err := os.ReadFile(*certFile)
		if err != nil {
			return fmt.Errorf("cluster revoke: %w", err)
		}
		s, cert, err := nodetls.CertSerial(data)
		if err != nil {
			return fmt.Errorf("cluster revoke: %s: %w", *certFile, err)
		}
		serial, entry.Subject = s, cert.Subject.String()
	} else if serial, err = nodetls.ParseSerial(*serialText); err != nil {
		return fmt.Errorf("cluster revoke: %w", err)
	}
	endpoints, etcdTLS, err := parseEtcdURL("--cluster", *cluster)
	if err != nil {
		return err
	}
	client, err := newEtcdClient(endpoints, etcdTLS)
	if err != nil {
		return fmt.Errorf("cluster revoke: etcd client: %w", err)
	}
	defer client.Close()
	value, _ := json.Marshal(entry)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.Put(ctx, revokedPrefix+serial, string(value)); err != nil {
		return fmt.Errorf("cluster revoke: etcd at %s: %w", strings.Join(endpoints, ","), err)
	}
	fmt.Fprintf(stdout, "revoked the node certificate with serial %s%s: the nodes refuse it from now on\n", serial, subjectNote(entry.Subject))
	return nil
}

func subjectNote(subject string) string {
	if subject == "" {
		return ""
	}
	return " (" + subject + ")"
}
