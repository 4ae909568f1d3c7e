package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAdminTokenMode is issue 18's admin.token finding: a token file
// that exists with mode 0644 ends up 0600 on start, whether it holds a
// token (kept) or something too short to be one (replaced).
func TestAdminTokenMode(t *testing.T) {
	for name, content := range map[string]string{
		"valid token": "0123456789abcdef0123456789abcdef0123\n",
		"too short":   "short\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "admin.token")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
				t.Fatal(err)
			}
			token, err := adminToken(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(token) < 32 {
				t.Errorf("token %q is too short", token)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Mode().Perm(); got != 0o600 {
				t.Errorf("admin.token has mode %o, want 600", got)
			}
			again, err := adminToken(dir)
			if err != nil || again != token {
				t.Errorf("second start read %q (%v), want the same token", again, err)
			}
		})
	}
}
