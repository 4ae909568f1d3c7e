package kassa

import "testing"

func TestFoldSearch(t *testing.T) {
	for in, want := range map[string]string{
		"ord-inr-1003": "ord-inr-1003",
		"ORD-INR-1003": "ord-inr-1003",
		"MÜLLER@x.de":  "müller@x.de",
		"\u212a":       "k", // Kelvin sign
		"ſ":            "s", // long s folds with s
		"a\x00b":       "a\ufffdb",
		"\xff":         "\ufffd",
	} {
		if got := FoldSearch(in); got != want {
			t.Errorf("FoldSearch(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSearchSuccessor(t *testing.T) {
	for in, want := range map[string]string{"ord-": "ord.", "a\ud7ff": "a\ue000", "b\U0010ffff": "c"} {
		if got, ok := SearchSuccessor(in); !ok || got != want {
			t.Errorf("SearchSuccessor(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := SearchSuccessor("\U0010ffff"); ok {
		t.Error("SearchSuccessor of the greatest rune has one")
	}
}
