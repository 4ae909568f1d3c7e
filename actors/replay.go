package actors

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

// JournalFault is an actor's journal that does not replay: an event after
// the snapshot that does not decode, or that the state machine refuses;
// or a snapshot that does not load (written in a newer format than this
// binary reads). The state it would give is unknown, so the actor
// refuses its commands (with this error) until an operator repairs the
// journal or runs the newer binary, rather than loading as if the event
// were not there or guessing at the document.
type JournalFault struct {
	Stream kassa.Stream `json:"stream"`
	// Seq is the sequence number of the event that does not apply, and
	// Event its kind (e.g. ExpiryReached); 0 and "snapshot" for the
	// snapshot.
	Seq   uint64 `json:"seq"`
	Event string `json:"event"`
	Err   error  `json:"-"`
}

func (f *JournalFault) Error() string {
	if f.Seq == 0 {
		return fmt.Sprintf("%s %s: the snapshot does not load: %v", f.Stream.Kind, f.Stream.ID, f.Err)
	}
	return fmt.Sprintf("%s %s: journal event %d (%s) does not apply: %v", f.Stream.Kind, f.Stream.ID, f.Seq, f.Event, f.Err)
}

func (f *JournalFault) Unwrap() error { return f.Err }

// eventKind names a protobuf oneof value as the journal's schema does:
// *protos.InvoiceEvent_ExpiryReached is ExpiryReached.
func eventKind(kind any) string {
	name := fmt.Sprintf("%T", kind)
	return name[strings.LastIndex(name, "_")+1:]
}

// snapshotFault returns the fault of a snapshot that does not load for
// good (a newer format), or nil for any other error.
func snapshotFault(s kassa.Stream, err error) *JournalFault {
	var verr *format.VersionError
	if errors.As(err, &verr) {
		return &JournalFault{Stream: s, Event: "snapshot", Err: err}
	}
	return nil
}

// JournalFaults lists the journals this node found not to replay since
// it started, by kind and id. The health check shows them to the
// operator.
func (s *Runtime) JournalFaults() []JournalFault { return s.journalFaults.list() }
