package kassatest

import (
	"bytes"
	"sync"
)

// LogBuffer is a log destination that goroutines (actors, a daemon's
// output copier) write while the test reads it. With Max set it keeps
// no more than about Max bytes (enough to say why a test failed) and
// drops the rest.
type LogBuffer struct {
	Max int

	mu sync.Mutex
	b  bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Max > 0 && b.b.Len() > b.Max {
		return len(p), nil
	}
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
