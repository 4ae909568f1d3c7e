package http

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/kassapay/kassa"
)

// Snapshot is a consistent copy of the data directory that `kassa
// backup` downloads: WriteTo streams it (a tar archive), Close removes it.
type Snapshot interface {
	io.WriterTo
	io.Closer
}

// adminBackup takes a snapshot of the running service's data and streams
// it. An error before the first byte is an error answer; one after it
// cuts the stream short, which the client detects (the archive ends with
// a manifest of every file and its checksum).
func (s *server) adminBackup(w http.ResponseWriter, r *http.Request) {
	if s.Backup == nil {
		s.writeError(w, r, kassa.Errorf(kassa.NotFound, "backups are not available on this server"))
		return
	}
	snap, err := s.Backup(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer snap.Close()
	// A large store takes longer than the server's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/octet-stream") // a tar archive
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if _, err := snap.WriteTo(w); err != nil {
		s.log.Error("backup: stream cut short", "err", err)
	}
}

// BackupFunc takes a snapshot for adminBackup.
type BackupFunc func(ctx context.Context) (Snapshot, error)
