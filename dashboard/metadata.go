package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// Bounds of the invoice page's metadata: what is stored may be nested
// deep (a store may predate the API's nesting limit), and indenting
// every level of thousands would make a page of megabytes.
const (
	// maxMetaDepth is the deepest level shown; a container below it is
	// shown as {…} or […].
	maxMetaDepth = 8
	// maxMetaBytes bounds the rendered text; past it the rest is cut
	// and "… truncated" says so.
	maxMetaBytes = 16 << 10
)

// renderMetadata returns raw, a JSON document, indented two spaces a
// level to at most maxMetaDepth levels and at most maxMetaBytes long
// (then with a line that says it was cut). Its cost is linear in raw:
// it reads tokens and stops at the bound. Not JSON: "".
func renderMetadata(raw []byte) string {
	if !json.Valid(raw) {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	// Each open container: whether it is an object, how many members
	// it has had, and (objects) whether the next string is a key.
	type level struct {
		object, wantKey bool
		n               int
	}
	var stack []level
	newline := func() {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat("  ", len(stack)))
	}
	// member starts a value or key in the innermost container.
	member := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		if top.object && !top.wantKey {
			return // the value after a key: on the key's line
		}
		if top.n > 0 {
			b.WriteByte(',')
		}
		top.n++
		newline()
	}
	// done ends a value: in an object, a key comes next.
	done := func() {
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = !stack[len(stack)-1].wantKey
		}
	}
	for {
		if b.Len() > maxMetaBytes {
			return cut(b.String())
		}
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ""
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				member()
				if len(stack) >= maxMetaDepth {
					if err := skipContainer(dec); err != nil {
						return ""
					}
					b.WriteString(map[json.Delim]string{'{': "{…}", '[': "[…]"}[v])
					done()
					continue
				}
				b.WriteByte(byte(v))
				stack = append(stack, level{object: v == '{', wantKey: v == '{'})
			default:
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top.n > 0 {
					newline()
				}
				b.WriteByte(byte(v))
				done()
			}
		case string:
			key := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey
			member()
			quote(&b, v)
			if key {
				b.WriteString(": ")
			}
			done()
		default:
			member()
			q, _ := json.Marshal(v)
			b.Write(q)
			done()
		}
	}
	if b.Len() > maxMetaBytes {
		return cut(b.String())
	}
	return b.String()
}

// cut shortens s to maxMetaBytes at a line's end (or a character's) and
// says so.
func cut(s string) string {
	s = s[:maxMetaBytes]
	if i := strings.LastIndexByte(s, '\n'); i > maxMetaBytes/2 {
		s = s[:i]
	}
	for !utf8.ValidString(s) { // a character cut in two
		s = s[:len(s)-1]
	}
	return s + "\n" + msg("inv.metatruncated")
}

// quote writes s as a JSON string, with <, > and & as they are: the
// template escapes the page.
func quote(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// skipContainer reads the rest of a container whose opening delimiter
// was just read.
func skipContainer(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}
