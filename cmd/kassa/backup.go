package main

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	nethttp "net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kassapay/kassa"
	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/persistence"
)

// A backup is a directory that holds what a data directory holds, a
// consistent Pebble checkpoint under pebble/ and admin.token, plus
// manifestName: the list of every file with its size and SHA-256, written
// last. `kassa backup` makes one from the running service; `kassa
// restore` checks it and copies it into a new data directory
// (docs/operators.md, "Backup and restore").
const (
	manifestName = "kassa-backup.json"
	// backupTmpPrefix names the snapshot directories inside the data
	// directory, beside pebble/, so that Pebble hard-links its tables.
	backupTmpPrefix = ".backup-"
	backupFormat    = 1
)

// backupManifest is manifestName.
type backupManifest struct {
	Format    int          `json:"format"`
	Version   string       `json:"version"`
	CreatedAt time.Time    `json:"createdAt"`
	Files     []backupFile `json:"files"`
}

type backupFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// newBackupFunc returns what POST /admin/v1/backup calls: it checkpoints
// db into a fresh directory inside data, one backup at a time. Snapshot
// directories a crash left behind are removed first (holding the lock,
// no other backup can be using them).
//
// A store that cannot checkpoint (PostgreSQL, --store postgres://) gets
// nil: the route answers 404, and the database's own tools back it up.
func newBackupFunc(data string, store storage, clock kassa.Clock) kassahttp.BackupFunc {
	db, ok := store.(checkpointer)
	if !ok {
		return nil
	}
	var mu sync.Mutex
	return func(ctx context.Context) (kassahttp.Snapshot, error) {
		if !mu.TryLock() {
			return nil, kassa.Errorf(kassa.Conflict, "a backup is already running; try again when it is done")
		}
		snap, err := takeSnapshot(data, db, clock)
		if err != nil {
			mu.Unlock()
			return nil, kassa.Errorf(kassa.Unavailable, "backup: %v", err)
		}
		snap.unlock = mu.Unlock
		return snap, nil
	}
}

// snapshot is a checkpoint in the data directory, streamed as tar.
type snapshot struct {
	dir     string
	files   []string // relative to dir, slash-separated, sorted
	created time.Time
	unlock  func()
	once    sync.Once
}

// checkpointer is a store that copies itself consistently while it
// serves (persistence.DB).
type checkpointer interface {
	Checkpoint(dir string) error
}

func takeSnapshot(data string, db checkpointer, clock kassa.Clock) (*snapshot, error) {
	stale, _ := filepath.Glob(filepath.Join(data, backupTmpPrefix+"*"))
	for _, dir := range stale {
		os.RemoveAll(dir)
	}
	dir, err := os.MkdirTemp(data, backupTmpPrefix)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{dir: dir, created: clock.Now().UTC()}
	if err := db.Checkpoint(filepath.Join(dir, "pebble")); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "admin.token"), token, 0o600)
	}
	if err == nil {
		snap.files, err = listFiles(dir)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return snap, nil
}

// listFiles lists the regular files under dir, relative and sorted.
func listFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		rel, err := filepath.Rel(dir, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	sort.Strings(files)
	return files, err
}

// WriteTo streams every file, then the manifest of their checksums.
func (s *snapshot) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	tw := tar.NewWriter(cw)
	m := backupManifest{Format: backupFormat, Version: Version, CreatedAt: s.created}
	for _, name := range s.files {
		f, err := os.Open(filepath.Join(s.dir, filepath.FromSlash(name)))
		if err != nil {
			return cw.n, err
		}
		st, err := f.Stat()
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: st.Size(), ModTime: st.ModTime(), Typeflag: tar.TypeReg})
		}
		h := sha256.New()
		if err == nil {
			var n int64
			n, err = io.Copy(tw, io.TeeReader(f, h))
			if err == nil && n != st.Size() {
				err = fmt.Errorf("%s changed size while it was copied", name)
			}
		}
		f.Close()
		if err != nil {
			return cw.n, err
		}
		m.Files = append(m.Files, backupFile{Name: name, Size: st.Size(), SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return cw.n, err
	}
	body = append(body, '\n')
	if err := tw.WriteHeader(&tar.Header{Name: manifestName, Mode: 0o600, Size: int64(len(body)), ModTime: s.created, Typeflag: tar.TypeReg}); err != nil {
		return cw.n, err
	}
	if _, err := tw.Write(body); err != nil {
		return cw.n, err
	}
	return cw.n, tw.Close()
}

// Close removes the snapshot directory and lets the next backup run.
func (s *snapshot) Close() error {
	var err error
	s.once.Do(func() {
		err = os.RemoveAll(s.dir)
		if s.unlock != nil {
			s.unlock()
		}
	})
	return err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

const backupUsage = `usage: kassa backup DIR [--server URL] [--data DIR]
  ask the running server for a consistent snapshot of its data (taken while
  it serves) and write it to DIR, which must not exist or be empty. The
  admin token is read from --data (KASSA_DATA); --server (KASSA_SERVER)
  says where the server listens. DIR holds a manifest of every file's
  SHA-256; kassa restore checks it.`

const restoreUsage = `usage: kassa restore DIR --data NEWDIR
  check the backup in DIR against its manifest and copy it into the data
  directory NEWDIR, which must not exist or be empty (a restore never
  overwrites data). Then start kassa serve --data NEWDIR.`

// runBackup is `kassa backup DIR`.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("kassa backup", flag.ContinueOnError)
	server := fset.String("server", "", "server URL (default $KASSA_SERVER, else http://$KASSA_LISTEN or the default listen address)")
	data := fset.String("data", os.Getenv("KASSA_DATA"), "data directory of the server, for its admin.token (default ./data)")
	rest, err := parseFlags(fset, args, func(w io.Writer) {
		fmt.Fprintln(w, backupUsage+"\n\nflags:")
		fset.SetOutput(w)
		fset.PrintDefaults()
	}, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, backupUsage)
		return errUsage
	}
	dest, err := filepath.Abs(rest[0])
	if err != nil {
		return err
	}
	if err := requireEmpty(dest); err != nil {
		return err
	}
	c, err := newAdminClient(*server, *data)
	if err != nil {
		return err
	}
	// The stream lasts as long as the data takes; only ctx (a signal) ends it.
	c.http = &nethttp.Client{}
	req, err := nethttp.NewRequestWithContext(ctx, "POST", c.server+"/admin/v1/backup", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reach server %s: %w", c.server, err)
	}
	defer res.Body.Close()
	if res.StatusCode != nethttp.StatusOK {
		out, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		var e struct{ Message string }
		if json.Unmarshal(out, &e) == nil && e.Message != "" {
			return fmt.Errorf("server answered %d: %s", res.StatusCode, e.Message)
		}
		return fmt.Errorf("server answered %d: %s", res.StatusCode, strings.TrimSpace(string(out)))
	}
	// Written beside DEST and renamed once complete and checked: DEST
	// never holds half a backup.
	tmp, err := os.MkdirTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".partial-")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(tmp)
	m, err := extractBackup(res.Body, tmp)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := syncDir(tmp); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Remove(dest); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := syncPath(filepath.Dir(dest)); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return printSummary(stdout, dest, m)
}

// extractBackup reads the server's tar stream into dir: regular files
// with local names only, checked against the manifest that ends it.
func extractBackup(r io.Reader, dir string) (*backupManifest, error) {
	tr := tar.NewReader(r)
	got := map[string]backupFile{}
	var m *backupManifest
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the stream broke off (%v): no backup written", err)
		}
		if m != nil {
			return nil, fmt.Errorf("the stream goes on after its manifest")
		}
		if hdr.Typeflag != tar.TypeReg || !filepath.IsLocal(hdr.Name) || strings.Contains(hdr.Name, `\`) {
			return nil, fmt.Errorf("the stream holds an unexpected entry %q", hdr.Name)
		}
		if hdr.Name == manifestName {
			var mm backupManifest
			if err := json.NewDecoder(io.LimitReader(tr, 16<<20)).Decode(&mm); err != nil {
				return nil, fmt.Errorf("read the manifest: %w", err)
			}
			m = &mm
			if err := writeJSONFile(filepath.Join(dir, manifestName), m); err != nil {
				return nil, err
			}
			continue
		}
		f, err := writeFile(filepath.Join(dir, filepath.FromSlash(hdr.Name)), tr)
		if err != nil {
			return nil, err
		}
		got[hdr.Name] = f
	}
	if m == nil {
		return nil, fmt.Errorf("the stream ended without its manifest: no backup written")
	}
	if err := checkFiles(m, func(name string) (backupFile, bool) { f, ok := got[name]; return f, ok }); err != nil {
		return nil, err
	}
	if len(got) != len(m.Files) {
		return nil, fmt.Errorf("the stream holds %d files, its manifest lists %d", len(got), len(m.Files))
	}
	return m, nil
}

// checkFiles compares every file of the manifest with what have reports.
func checkFiles(m *backupManifest, have func(name string) (backupFile, bool)) error {
	if m.Format != backupFormat {
		return fmt.Errorf("backup format %d; this kassa reads format %d", m.Format, backupFormat)
	}
	pebble := false
	for _, want := range m.Files {
		if !filepath.IsLocal(want.Name) {
			return fmt.Errorf("the manifest names %q", want.Name)
		}
		got, ok := have(want.Name)
		switch {
		case !ok:
			return fmt.Errorf("%s is missing", want.Name)
		case got.Size != want.Size || got.SHA256 != want.SHA256:
			return fmt.Errorf("%s is damaged: %d bytes, SHA-256 %s; the manifest says %d bytes, %s",
				want.Name, got.Size, got.SHA256, want.Size, want.SHA256)
		}
		pebble = pebble || strings.HasPrefix(want.Name, "pebble/")
	}
	if !pebble {
		return fmt.Errorf("the backup holds no pebble/ store")
	}
	return nil
}

// writeFile writes r to path (mode 0600, its directories 0700), synced,
// and returns its size and checksum.
func writeFile(path string, r io.Reader) (backupFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return backupFile{}, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return backupFile{}, err
	}
	h := sha256.New()
	n, err := io.Copy(f, io.TeeReader(r, h))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return backupFile{}, fmt.Errorf("write %s: %w", path, err)
	}
	return backupFile{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func writeJSONFile(path string, v any) error {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = writeFile(path, strings.NewReader(string(body)+"\n"))
	return err
}

// hashFile returns the size and checksum of a file.
func hashFile(path string) (backupFile, bool) {
	f, err := os.Open(path)
	if err != nil {
		return backupFile{}, false
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return backupFile{}, false
	}
	return backupFile{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, true
}

// requireEmpty accepts a path that does not exist or is an empty
// directory.
func requireEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: choose a new directory (nothing is overwritten)", dir)
	}
	return nil
}

// syncDir fsyncs every directory under root, so that the new names are
// on disk.
func syncDir(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return syncPath(path)
	})
}

func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func printSummary(w io.Writer, dir string, m *backupManifest) error {
	var size int64
	for _, f := range m.Files {
		size += f.Size
	}
	return json.NewEncoder(w).Encode(map[string]any{
		"dir": dir, "files": len(m.Files), "bytes": size, "createdAt": m.CreatedAt, "version": m.Version,
	})
}

// runRestore is `kassa restore DIR --data NEWDIR`.
func runRestore(args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("kassa restore", flag.ContinueOnError)
	data := fset.String("data", "", "the new data directory (required; must not exist or be empty)")
	rest, err := parseFlags(fset, args, func(w io.Writer) {
		fmt.Fprintln(w, restoreUsage+"\n\nflags:")
		fset.SetOutput(w)
		fset.PrintDefaults()
	}, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 1 || *data == "" {
		fmt.Fprintln(stderr, restoreUsage)
		return errUsage
	}
	src := rest[0]
	var m backupManifest
	raw, err := os.ReadFile(filepath.Join(src, manifestName))
	if err != nil {
		return fmt.Errorf("restore: %s is not a kassa backup: %w", src, err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("restore: %s: %w", manifestName, err)
	}
	if err := checkFiles(&m, func(name string) (backupFile, bool) {
		return hashFile(filepath.Join(src, filepath.FromSlash(name)))
	}); err != nil {
		return fmt.Errorf("restore: the backup in %s fails its check: %w", src, err)
	}
	dest, err := filepath.Abs(*data)
	if err != nil {
		return err
	}
	if err := requireEmpty(dest); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := os.MkdirAll(dest, 0o700); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := os.Chmod(dest, 0o700); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := restoreFiles(src, dest, &m); err != nil {
		// Leave the directory as empty as it was found.
		entries, _ := os.ReadDir(dest)
		for _, e := range entries {
			os.RemoveAll(filepath.Join(dest, e.Name()))
		}
		return fmt.Errorf("restore: %w", err)
	}
	return printSummary(stdout, dest, &m)
}

// restoreFiles copies the files of m from src into dest, checks the
// copies, and opens the store once to prove it is whole.
func restoreFiles(src, dest string, m *backupManifest) error {
	for _, f := range m.Files {
		in, err := os.Open(filepath.Join(src, filepath.FromSlash(f.Name)))
		if err != nil {
			return err
		}
		got, err := writeFile(filepath.Join(dest, filepath.FromSlash(f.Name)), in)
		in.Close()
		if err != nil {
			return err
		}
		if got.SHA256 != f.SHA256 {
			return fmt.Errorf("%s changed while it was copied", f.Name)
		}
	}
	if err := syncDir(dest); err != nil {
		return err
	}
	db, err := persistence.Open(filepath.Join(dest, "pebble"), persistence.Options{})
	if err != nil {
		return fmt.Errorf("the restored store does not open: %w", err)
	}
	return db.Close()
}
