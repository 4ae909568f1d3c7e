package kassa

import (
	"cmp"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SearchField names the fields of an invoice a search looks in.
type SearchField uint8

// The fields a search looks in.
const (
	// SearchOrderID is the invoice's order id (Invoice.SearchOrderID).
	SearchOrderID SearchField = 1 << iota
	// SearchEmail is the buyer's e-mail.
	SearchEmail
	// SearchID is the invoice's id.
	SearchID
	// SearchAll is every field; a zero SearchQuery.In means it.
	SearchAll = SearchOrderID | SearchEmail | SearchID
)

// MaxSearchText bounds a search's text, in bytes once folded; the stores
// index the first MaxSearchText bytes of each field, so that every text a
// search may look for is found exactly.
const MaxSearchText = 1024

// SearchQuery selects a store's invoices whose order id, buyer e-mail or
// id starts with Text (or is Text, when Exact), compared folded (see
// FoldSearch); ListQuery's dates, limit and cursor apply as in
// Reader.Invoices, newest first.
type SearchQuery struct {
	ListQuery
	Text string
	// In are the fields looked in, any of which may match; zero means
	// SearchAll.
	In    SearchField
	Exact bool
}

// Fields returns the fields q looks in.
func (q SearchQuery) Fields() SearchField {
	if q.In&SearchAll == 0 {
		return SearchAll
	}
	return q.In & SearchAll
}

// Folded returns q's text folded, or an Invalid error when it is empty
// or longer than MaxSearchText once folded.
func (q SearchQuery) Folded() (string, error) {
	f := FoldSearch(q.Text)
	if f == "" {
		return "", Errorf(Invalid, "a search needs a text to look for")
	}
	if len(f) > MaxSearchText {
		return "", Errorf(Invalid, "a search text is at most %d bytes", MaxSearchText)
	}
	return f, nil
}

// FoldSearch is the one rule by which searches compare text, on every
// store: each rune becomes the lower case of the smallest rune of its
// Unicode simple case folding orbit (the runes strings.EqualFold takes
// as equal: "K", "k" and the Kelvin sign all become "k"); NUL and bytes
// that are not UTF-8 become U+FFFD. It maps rune by rune, so the fold of
// a prefix is a prefix of the fold, and it leaves ASCII digits,
// punctuation and lower-case letters as they are.
func FoldSearch(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c == 0 || 'A' <= c && c <= 'Z' {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	return strings.Map(foldRune, s)
}

func foldRune(r rune) rune {
	if r == 0 || r == utf8.RuneError {
		return utf8.RuneError
	}
	if r < utf8.RuneSelf {
		return unicode.ToLower(r)
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return unicode.ToLower(least)
}

// SearchTerms are an invoice's indexed values, folded and cut to at most
// MaxSearchText bytes at a rune's end; empty ones are "".
type SearchTerms struct {
	OrderID, Email, ID string
}

// SearchTerms returns what the stores index of inv for SearchInvoices.
func (inv *Invoice) SearchTerms() SearchTerms {
	return SearchTerms{
		OrderID: searchTerm(inv.SearchOrderID()),
		Email:   searchTerm(inv.BuyerEmail),
		ID:      searchTerm(inv.ID),
	}
}

func searchTerm(s string) string {
	f := FoldSearch(s)
	if len(f) <= MaxSearchText {
		return f
	}
	end := MaxSearchText
	for end > 0 && !utf8.RuneStart(f[end]) {
		end--
	}
	return f[:end]
}

// SearchOrderID is the order id a search finds an invoice by: its
// OrderID, else its metadata.orderId (a string, or a number's digits),
// as the checkout page shows it.
func (inv *Invoice) SearchOrderID() string {
	return cmp.Or(inv.OrderID, metadataOrderID(inv.Metadata))
}

func metadataOrderID(metadata json.RawMessage) string {
	if len(metadata) == 0 {
		return ""
	}
	var m struct {
		OrderID json.RawMessage `json:"orderId"`
	}
	if json.Unmarshal(metadata, &m) != nil || len(m.OrderID) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(m.OrderID, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(m.OrderID, &n) == nil {
		return n.String()
	}
	return ""
}

// SearchSuccessor returns the least string greater than every string
// with prefix p in code point order (byte order of UTF-8), itself valid
// UTF-8, and false when there is none (p is all U+10FFFF). p is valid
// UTF-8, as FoldSearch's results are.
func SearchSuccessor(p string) (string, bool) {
	for p != "" {
		r, size := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-size]
		next := r + 1
		if next == 0xD800 {
			next = 0xE000
		}
		if next <= unicode.MaxRune {
			return p + string(next), true
		}
	}
	return "", false
}
