package http

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestErrorCodesAsDocumented reads the table of error codes in
// docs/api.md and checks that each status is answered with the code the
// table names, and that every code the server maps is in the table.
func TestErrorCodesAsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| (\\d{3}) \\| `([a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1)
	if len(rows) == 0 {
		t.Fatal("no error table in docs/api.md")
	}
	documented := map[string]int{}
	for _, row := range rows {
		status, _ := strconv.Atoi(row[1])
		documented[row[2]] = status
	}
	for code, status := range statusByCode {
		if got, ok := documented[code]; !ok || got != status {
			t.Errorf("the server answers %d with code %q; docs/api.md has %v for that code (ok=%v)", status, code, got, ok)
		}
	}
	if len(documented) != len(statusByCode) {
		t.Errorf("docs/api.md lists %d codes, the server maps %d", len(documented), len(statusByCode))
	}
}
