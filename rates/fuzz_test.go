package rates

import (
	"testing"
	"unicode/utf8"
)

// FuzzProviderText feeds outside input to the parsers of provider
// answers: prices must come out positive and bounded or not at all, and
// error texts must be one clean, bounded line.
func FuzzProviderText(f *testing.F) {
	for _, seed := range []string{
		`"87012.40000"`, `87011`, `1.5008733e7`, `"-1"`, `null`, `"1e999999999"`, `1e-99999`,
		`{"error":["EQuery:Unknown asset pair"]}`,
		`{"errors":[{"id":"not_found","message":"Invalid currency"}]}`,
		`{"status":"error","reason":{"__all__":["x"]},"code":"API0020"}`,
		`{"status":{"error_code":429,"error_message":"You've exceeded the Rate Limit."}}`,
		"{\"error\":\"a\\nb\\u0000c\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if rate, err := parseRate(raw); err == nil && (!rate.IsPositive() || rate.GreaterThanOrEqual(maxRate)) {
			t.Errorf("parseRate(%q) = %s", raw, rate)
		}
		for _, text := range []func([]byte) string{krakenErrorText, coinbaseErrorText, bitstampErrorText, coinGeckoErrorText} {
			msg := cleanMessage(text(raw))
			if utf8.RuneCountInString(msg) > 201 {
				t.Errorf("message of %d runes", utf8.RuneCountInString(msg))
			}
			for _, r := range msg {
				if r == '\n' || r == '\r' || r == 0 {
					t.Errorf("message %q has a control character", msg)
				}
			}
		}
	})
}
