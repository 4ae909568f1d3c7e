package http

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/kassapay/kassa"
)

// fixedSnapshot writes fixed bytes; it stands in for the checkpoint that
// cmd/kassa takes (tested there end to end).
type fixedSnapshot struct {
	data   string
	closed *bool
}

func (s fixedSnapshot) WriteTo(w io.Writer) (int64, error) {
	n, err := io.WriteString(w, s.data)
	return int64(n), err
}

func (s fixedSnapshot) Close() error { *s.closed = true; return nil }

// TestAdminBackup streams the snapshot to the admin, closes it after, and
// answers the snapshot's failures as errors.
func TestAdminBackup(t *testing.T) {
	t.Parallel()
	closed := false
	var fail error
	e := newEnv(t, withDeps(func(d *Deps) {
		d.Backup = func(context.Context) (Snapshot, error) {
			if fail != nil {
				return nil, fail
			}
			return fixedSnapshot{data: "tar archive", closed: &closed}, nil
		}
	}))
	w := e.do("POST", "/admin/v1/backup", "", admin)
	expectStatus(t, w, 200)
	if w.Body.String() != "tar archive" || w.Header().Get("Content-Type") != "application/octet-stream" || !closed {
		t.Errorf("backup answered %q (%s), snapshot closed: %v", w.Body.String(), w.Header().Get("Content-Type"), closed)
	}
	expectError(t, e.do("POST", "/admin/v1/backup", ""), 401, kassa.Unauthorized)
	fail = kassa.Errorf(kassa.Conflict, "a backup is already running")
	expectError(t, e.do("POST", "/admin/v1/backup", "", admin), 409, kassa.Conflict, "already running")
	fail = kassa.Errorf(kassa.Unavailable, "backup: no space left on device")
	expectError(t, e.do("POST", "/admin/v1/backup", "", admin), 503, kassa.Unavailable)
	fail = errors.New("checkpoint: boom")
	expectStatus(t, e.do("POST", "/admin/v1/backup", "", admin), 500)

	none := newEnv(t)
	expectError(t, none.do("POST", "/admin/v1/backup", "", admin), 404, kassa.NotFound)
}
