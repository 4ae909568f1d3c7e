package persistence

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

const sep = 0x00

func key(prefix string, parts ...[]byte) []byte {
	n := len(prefix)
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 0, n)
	k = append(k, prefix...)
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// ms encodes a time as fixed-width milliseconds since 1970; times before
// 1970 sort as 0.
func ms(t time.Time) []byte {
	v := t.UnixMilli()
	if v < 0 {
		v = 0
	}
	return u64(uint64(v))
}

func str(s string) []byte { return []byte(s) }

var sepb = []byte{sep}

func eventKey(kind, id string, seq uint64) []byte {
	return key("e/", str(kind), sepb, str(id), sepb, u64(seq))
}
func eventPrefix(kind, id string) []byte { return key("e/", str(kind), sepb, str(id), sepb) }
func invoiceKey(id string) []byte        { return key("inv/", str(id)) }
func storeKey(id string) []byte          { return key("sto/", str(id)) }
func paymentRequestKey(id string) []byte { return key("pr/", str(id)) }
func invoiceByStoreKey(store string, created time.Time, id string) []byte {
	return key("ist/", str(store), sepb, ms(created), str(id))
}
func invoiceByStorePrefix(store string) []byte { return key("ist/", str(store), sepb) }
func addressKey(addr string) []byte            { return key("iad/", str(addr)) }
func paymentHashKey(hash string) []byte        { return key("iph/", str(hash)) }
func openKey(deadline time.Time, id string) []byte {
	return key("iop/", ms(deadline), str(id))
}
func transactionKey(id int64) []byte { return key("tx/", u64(uint64(id))) }
func transactionByStoreKey(store string, created time.Time, id int64) []byte {
	return key("tst/", str(store), sepb, ms(created), u64(uint64(id)))
}
func transactionByStorePrefix(store string) []byte { return key("tst/", str(store), sepb) }
func transactionByInvoiceKey(invoice string, id int64) []byte {
	return key("tin/", str(invoice), sepb, u64(uint64(id)))
}
func transactionByInvoicePrefix(invoice string) []byte { return key("tin/", str(invoice), sepb) }
func paymentRequestByStoreKey(store string, created time.Time, id string) []byte {
	return key("prs/", str(store), sepb, ms(created), str(id))
}
func paymentRequestByStorePrefix(store string) []byte { return key("prs/", str(store), sepb) }
func balanceKey(store string) []byte                  { return key("bal/", str(store)) }
func apiKeyKey(apiKey string) []byte {
	sum := sha256.Sum256([]byte(apiKey))
	return key("key/", str(hex.EncodeToString(sum[:])))
}
func paymentRequestPaidKey(id string) []byte { return key("prp/", str(id)) }
func kvKey(k string) []byte                  { return key("kv/", str(k)) }

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
