package dashboard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// domainMessageDirs are the packages whose errors the dashboard's
// pages show: the domain (the root package), the actors that run its
// commands, what they call to check input (refund, rates, egress,
// lnurl, chain/derive, topup), the readers behind the lists, and the
// dashboard itself.
var domainMessageDirs = []string{"..", "../actors", "../refund", "../rates", "../egress", "../lnurl",
	"../chain/derive", "../topup", "../persistence", "../persistence/postgres", "."}

// pageCodes are the error codes whose message a page shows (fieldErrors
// and the pages' own checks); the others show a page of their own.
var pageCodes = []string{"Invalid", "Conflict", "PaymentRequired", "Unavailable", "TooLarge"}

// notOnPage reports a format whose message no catalogue needs: one
// that is all verbs ("%s") passes on a message made elsewhere, and a
// peer node's malformed command ("... from another node ...") is a bug
// between nodes that no input of a page brings about.
func notOnPage(format string) bool {
	return fmtVerb.ReplaceAllString(format, "") == "" || strings.Contains(format, "from another node")
}

// sourceMessage is an English message format and where it is made.
type sourceMessage struct{ format, pos string }

// domainMessages collects, from the source of dirs, the
// format of every Errorf with a page code and the message of every
// FieldError (a literal or fmt.Sprintf's format): the messages a page
// can show. A message made some other way is reported in odd, for the
// test to name, so that none escapes the catalogue unseen.
func domainMessages(t *testing.T, dirs ...string) (msgs []sourceMessage, odd []string) {
	t.Helper()
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			lit := func(e ast.Expr) (string, bool) { return stringConst(sprintfFormat(e)) }
			// fromOther reports a message that is another error's
			// (ErrorMessage(err)) or another node's (GetMessage of a
			// reply), whose own source is collected.
			fromOther := func(e ast.Expr) bool {
				call, ok := e.(*ast.CallExpr)
				return ok && (callName(call) == "ErrorMessage" || callName(call) == "GetMessage")
			}
			note := func(e ast.Expr) {
				if s, ok := lit(e); ok {
					if notOnPage(s) {
						return
					}
					msgs = append(msgs, sourceMessage{s, fset.Position(e.Pos()).String()})
				} else if id, ok := sprintfFormat(e).(*ast.Ident); ok && (id.Name == "msg" || id.Name == "format") {
					// a helper's parameter (add, bad) or a *Problem
					// function's result, whose literals are collected
				} else if !fromOther(e) {
					odd = append(odd, fset.Position(e.Pos()).String())
				}
			}
			// fieldError notes the message of a FieldError literal:
			// its Message, or its second element.
			fieldError := func(n *ast.CompositeLit) {
				if len(n.Elts) < 2 {
					return
				}
				for i, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok && identName(kv.Key) == "Message" {
						note(kv.Value)
					} else if !ok && i == 1 {
						note(e)
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if callName(n) == "Errorf" && len(n.Args) >= 2 && slices.Contains(pageCodes, identName(n.Args[0])) {
						note(n.Args[1])
					}
					// add(field, msg) and bad(format, args...): the
					// helpers that make a FieldError or an Errorf.
					if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "add" && len(n.Args) == 2 {
						if _, isField := stringConst(n.Args[0]); isField {
							note(n.Args[1])
						}
					}
					if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "bad" && len(n.Args) >= 1 {
						note(n.Args[0])
					}
				case *ast.FuncDecl:
					// amountProblem, xpubProblem: a field's message or "".
					if strings.HasSuffix(n.Name.Name, "Problem") && n.Body != nil {
						ast.Inspect(n.Body, func(m ast.Node) bool {
							if ret, ok := m.(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
								if s, ok := lit(ret.Results[0]); !ok || s != "" {
									note(ret.Results[0])
								}
							}
							return true
						})
					}
				case *ast.CompositeLit:
					if isFieldError(n.Type) {
						fieldError(n)
					}
					// []FieldError{{...}}, map[K]FieldError{k: {...}}:
					// elements whose type is elided.
					if fieldErrorElts(n.Type) {
						for _, e := range n.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok {
								e = kv.Value
							}
							if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
								e = u.X
							}
							if el, ok := e.(*ast.CompositeLit); ok && el.Type == nil {
								fieldError(el)
							}
						}
					}
				}
				return true
			})
		}
	}
	return msgs, odd
}

// sprintfFormat is the format of fmt.Sprintf(format, ...), or e itself.
func sprintfFormat(e ast.Expr) ast.Expr {
	if call, ok := e.(*ast.CallExpr); ok && callName(call) == "Sprintf" && len(call.Args) > 0 {
		return call.Args[0]
	}
	return e
}

// isFieldError reports whether t names FieldError (kassa.FieldError), or
// a pointer to it.
func isFieldError(t ast.Expr) bool {
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	return t != nil && identName(t) == "FieldError"
}

// fieldErrorElts reports whether t is a slice, array or map type whose
// elements are FieldErrors (or pointers to them), which its literals
// may write without their type.
func fieldErrorElts(t ast.Expr) bool {
	switch t := t.(type) {
	case *ast.ArrayType:
		return isFieldError(t.Elt)
	case *ast.MapType:
		return isFieldError(t.Value)
	}
	return false
}

// TestDomainMessagesCollector: the collector reads a FieldError's
// message however the literal is written, its type named or elided (in
// a slice, array or map of FieldError or *FieldError).
func TestDomainMessagesCollector(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "fmt"

var (
	_ = FieldError{Field: "a", Message: "typed"}
	_ = &kassa.FieldError{"a", "typed pointer"}
	_ = []FieldError{{Field: "a", Message: "in a slice"}}
	_ = []kassa.FieldError{{"a", fmt.Sprintf("in a kassa slice %d", 1)}}
	_ = [2]FieldError{{"a", "in an array"}, {Message: "second of the array", Field: "b"}}
	_ = []*FieldError{{"a", "in a pointer slice"}, &FieldError{"b", "written pointer"}}
	_ = map[string]FieldError{"k": {"a", "in a map"}}
	_ = []struct{ A, B string }{{"a", "not a FieldError"}}
)
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	msgs, odd := domainMessages(t, dir)
	var got []string
	for _, m := range msgs {
		got = append(got, m.format)
	}
	want := []string{"typed", "typed pointer", "in a slice", "in a kassa slice %d", "in an array", "second of the array",
		"in a pointer slice", "written pointer", "in a map"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(odd) > 0 {
		t.Errorf("collected %q (odd %v), want %q", got, odd, want)
	}
}

// stringConst is the string a literal, or a sum of literals, spells.
func stringConst(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		a, ok1 := stringConst(e.X)
		b, ok2 := stringConst(e.Y)
		return a + b, ok1 && ok2 && e.Op == token.ADD
	case *ast.ParenExpr:
		return stringConst(e.X)
	}
	return "", false
}

// callName is the name of the function call calls (Errorf of
// kassa.Errorf).
func callName(call *ast.CallExpr) string { return identName(call.Fun) }

func identName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
