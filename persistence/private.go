package persistence

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The data directory holds API keys, webhook secrets and every payment:
// only the service's user may read it.
const (
	dirMode  = 0o700
	fileMode = 0o600
)

// privateFS is the disk with the modes above: the directories it makes
// are 0700 and the files it creates 0600, whatever the umask. A file is
// made by the operating system's default first and narrowed right after;
// its directory is 0700 already, so nobody else can reach it meanwhile.
type privateFS struct{ vfs.FS }

func (p privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	return f, narrow(f, name, err)
}

func (p privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, category, opts...)
	return f, narrow(f, name, err)
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	if err == nil {
		if err = os.Chmod(name, fileMode); err != nil {
			c.Close()
			return nil, fmt.Errorf("make %s private: %w", name, err)
		}
	}
	return c, err
}

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error {
	return p.FS.MkdirAll(dir, dirMode)
}

// narrow sets a file just opened to fileMode.
func narrow(f vfs.File, name string, err error) error {
	if err != nil {
		return err
	}
	if err := os.Chmod(name, fileMode); err != nil {
		f.Close()
		return fmt.Errorf("make %s private: %w", name, err)
	}
	return nil
}

// makePrivate creates dir as 0700, or narrows it and the files already in
// it (made by an older version or by hand) to the modes above.
func makePrivate(dir string) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		mode := fs.FileMode(fileMode)
		if d.IsDir() {
			mode = dirMode
		} else if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() == mode {
			return nil
		}
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("make %s private: %w", path, err)
		}
		return nil
	})
}
