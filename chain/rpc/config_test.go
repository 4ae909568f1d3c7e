package rpc

import (
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	c, err := ParseURL("rpc://alice:s3cr%40t@127.0.0.1:18334?network=regtest&cert=/tmp/rpc.cert")
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "127.0.0.1:18334" || c.User != "alice" || c.Pass != "s3cr@t" || c.Cert != "/tmp/rpc.cert" ||
		c.NoTLS || c.Params.Name != "regtest" || c.Poll != DefaultPollRegtest {
		t.Fatalf("parsed %+v", c)
	}
	c, err = ParseURL("rpc://127.0.0.1:8332?network=mainnet&cookie=/home/btc/.bitcoin/.cookie&notls=1&poll=30s")
	if err != nil {
		t.Fatal(err)
	}
	if c.Cookie != "/home/btc/.bitcoin/.cookie" || !c.NoTLS || c.Params.Name != "mainnet" || c.Poll != 30*time.Second {
		t.Fatalf("parsed %+v", c)
	}
	if c, _ := ParseURL("rpc://u:p@h:1?network=signet"); c.Poll != DefaultPoll {
		t.Fatalf("signet polls every %s", c.Poll)
	}
	for _, bad := range []struct{ url, says string }{
		{"http://u:hunter2@h:1?network=regtest", "rpc://"},
		{"rpc://u:hunter2@h:1", "network"},
		{"rpc://u:hunter2@h:1?network=litecoin", "unknown network"},
		{"rpc://h:1?network=regtest", "USER:PASS or cookie"},
		{"rpc://u:hunter2@h:1?network=regtest&cookie=/c", "USER:PASS or cookie"},
		{"rpc://u:hunter2@h:1?network=regtest&notls=maybe", "notls"},
		{"rpc://u:hunter2@h:1?network=regtest&poll=1ns", "poll"},
	} {
		_, err := ParseURL(bad.url)
		if err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%s: err %v, want one that says %q", bad.url, err, bad.says)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error repeats the password", bad.url)
		}
	}
}
