package rates

import (
	"testing"
	"time"
)

func TestHugeExponentTmp(t *testing.T) {
	for _, s := range []string{`"1e999999999"`, `1e99999999`, `1e-99999999`, `"9.9e9999999"`} {
		start := time.Now()
		r, err := parseRate([]byte(s))
		t.Logf("%s → %v %v in %s", s, r.Exponent(), err, time.Since(start))
	}
}
