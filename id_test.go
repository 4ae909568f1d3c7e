package kassa

import (
	"net/url"
	"strings"
	"testing"
)

func TestNewID(t *testing.T) {
	seen := make(map[string]bool)
	for range 10_000 {
		id := NewID("inv_")
		if !strings.HasPrefix(id, "inv_") || len(id) != 24 {
			t.Fatalf("NewID = %q, want inv_ and 20 characters", id)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q", id)
		}
		seen[id] = true
		if url.PathEscape(id) != id || url.QueryEscape(id) != id {
			t.Fatalf("NewID = %q is not URL-safe", id)
		}
		if !ValidID(id) {
			t.Fatalf("NewID = %q is not a ValidID", id)
		}
		// No characters that read alike.
		if strings.ContainsAny(id[4:], "lo01ABCDEFGHIJKLMNOPQRSTUVWXYZ_-") {
			t.Fatalf("NewID = %q has ambiguous characters", id)
		}
	}
	if id := NewID(""); len(id) != 20 || !ValidID(id) {
		t.Errorf("NewID(\"\") = %q", id)
	}
}

func TestNewSecret(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	if len(a) != 64 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Errorf("NewSecret = %q, %q", a, b)
	}
}

func TestValidID(t *testing.T) {
	for _, id := range []string{"a", "inv_7x", "A-b_9", strings.Repeat("z", 64), "12345"} {
		if !ValidID(id) {
			t.Errorf("ValidID(%q) = false", id)
		}
	}
	for _, id := range []string{
		"", strings.Repeat("z", 65), "a/b", "../x", "a b", "a.b", "a%2F", "é", "a\x00", "a\n", "a:b", "ａ",
	} {
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
}
