package actors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestInProcessClusterTestsAreNamedSo: every test that starts an
// in-process cluster (it reaches skipRemoteUnderRace, itself or through
// helpers) is named TestCluster…: the fast tier skips them, and
// `go test -race -run TestCluster ./actors/` runs every one of them.
func TestInProcessClusterTestsAreNamedSo(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string][]string{} // function → the functions it calls by name
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Recv != nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok {
						calls[fn.Name.Name] = append(calls[fn.Name.Name], id.Name)
					}
				}
				return true
			})
		}
	}
	starts := map[string]bool{"skipRemoteUnderRace": true}
	for changed := true; changed; {
		changed = false
		for fn, callees := range calls {
			for _, c := range callees {
				if starts[c] && !starts[fn] {
					starts[fn], changed = true, true
				}
			}
		}
	}
	n := 0
	for fn := range starts {
		if !strings.HasPrefix(fn, "Test") {
			continue
		}
		n++
		if !strings.HasPrefix(fn, "TestCluster") {
			t.Errorf("%s starts an in-process cluster but is not named TestCluster…: make test would never run it", fn)
		}
	}
	if n < 10 {
		t.Fatalf("found only %d in-process cluster tests", n)
	}
}
