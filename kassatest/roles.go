package kassatest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

// RoleTable is the table of docs/roles.md: for each surface ("api",
// Kassa's API; "greenfield"; "dashboard"), each route ("METHOD
// pattern", as that surface's router names it) and each role, whether
// the role is let through (true, "✓") or refused with 403 (false).
type RoleTable map[string]map[string]map[kassa.Role]bool

// ReadRoleTable reads docs/roles.md of the module the test runs in. Its
// rows are "| surface | `METHOD pattern` | Owner | Manager | Employee |
// Guest |" with ✓ or 403 in each role's cell; a row of any other shape
// under the table's header fails the test.
func ReadRoleTable(t testing.TB) RoleTable {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	raw, err := os.ReadFile(filepath.Join(dir, "docs", "roles.md"))
	if err != nil {
		t.Fatal(err)
	}
	table := RoleTable{}
	in := false
	for n, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case len(cells) == 6 && cells[0] == "surface":
			for i, r := range kassa.Roles {
				if cells[2+i] != string(r) {
					t.Fatalf("docs/roles.md:%d: column %d is %q, want %s", n+1, 3+i, cells[2+i], r)
				}
			}
			in = true
			continue
		case !in || strings.HasPrefix(line, "|---"):
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		case len(cells) != 6:
			t.Fatalf("docs/roles.md:%d: %d cells, want 6: %s", n+1, len(cells), line)
		}
		surface, route := cells[0], strings.Trim(cells[1], "`")
		if table[surface] == nil {
			table[surface] = map[string]map[kassa.Role]bool{}
		}
		if table[surface][route] != nil {
			t.Fatalf("docs/roles.md:%d: %s %s twice", n+1, surface, route)
		}
		row := map[kassa.Role]bool{}
		for i, r := range kassa.Roles {
			switch cells[2+i] {
			case "✓":
				row[r] = true
			case "403":
				row[r] = false
			default:
				t.Fatalf("docs/roles.md:%d: %s's cell is %q, want ✓ or 403", n+1, r, cells[2+i])
			}
		}
		table[surface][route] = row
	}
	return table
}

// Row is how docs/roles.md writes the row of route on surface with
// allowed for each role, for a test to print the row a route lacks.
func (RoleTable) Row(surface, route string, allowed map[kassa.Role]bool) string {
	var b strings.Builder
	b.WriteString("| " + surface + " | `" + route + "` |")
	for _, r := range kassa.Roles {
		if allowed[r] {
			b.WriteString(" ✓ |")
		} else {
			b.WriteString(" 403 |")
		}
	}
	return b.String()
}
