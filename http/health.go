package http

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

// healthTTL is how long a backend's answer serves the health check
// before it is asked again, and healthProbeTimeout how long one asking
// may take. A health request never waits for a backend: it answers with
// the last reading while a new one is taken in the background
// (docs/decisions.md, "Observability").
const (
	healthTTL          = 5 * time.Second
	healthProbeTimeout = 15 * time.Second
	// healthFirstWait is how long the first health request waits for the
	// first reading of a backend.
	healthFirstWait = 2 * time.Second
)

// infoSource is a backend that reports on itself.
type infoSource interface {
	Info(context.Context) kassa.BackendInfo
}

// backendProbe caches the readings of one backend: the last one, when it
// was taken, and whether one is being taken now. Each component of the
// health answer has one, so that a component added later (storage
// reached over the network, the cluster) is read the same way.
type backendProbe struct {
	source infoSource
	ttl    time.Duration
	mu     sync.Mutex
	last   kassa.BackendInfo
	at     time.Time
	have   bool
	busy   bool
	first  chan struct{} // closed once the first reading is in
}

func newBackendProbe(source infoSource, ttl time.Duration) *backendProbe {
	return &backendProbe{source: source, ttl: ttl, first: make(chan struct{})}
}

// read returns the last reading and starts a new one when it is older
// than the probe's time to live. Only the very first read waits, at most healthFirstWait.
func (p *backendProbe) read(ctx context.Context) kassa.BackendInfo {
	if p.source == nil {
		return kassa.BackendInfo{Backend: "none", Error: "not configured"}
	}
	p.mu.Lock()
	if (!p.have || time.Since(p.at) >= p.ttl) && !p.busy {
		p.busy = true
		go p.refresh()
	}
	info, have := p.last, p.have
	p.mu.Unlock()
	if have {
		return info
	}
	select {
	case <-p.first:
	case <-ctx.Done():
	case <-time.After(healthFirstWait):
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.have {
		return kassa.BackendInfo{Backend: "unknown", Error: "no reading yet"}
	}
	return p.last
}

// refresh takes one reading. A backend that cannot be reached keeps the
// network it reported last, so that health still says which network the
// service runs on.
func (p *backendProbe) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), healthProbeTimeout)
	defer cancel()
	info := p.source.Info(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if info.Network == "" && p.have {
		info.Network = p.last.Network
	}
	first := !p.have
	p.last, p.at, p.have, p.busy = info, time.Now(), true, false
	if first {
		close(p.first)
	}
}

// healthRecord is the health check's answer. The public answer says ok
// or degraded per component and what the service runs on; the errors,
// warnings, node details and the cluster's addresses are in the answer
// to the admin token only.
type healthRecord struct {
	Status       string          `json:"status"`
	Chain        componentHealth `json:"chain"`
	Lightning    componentHealth `json:"lightning"`
	Synchronized bool            `json:"synchronized"`
	Simulation   bool            `json:"simulation"`
	Rates        string          `json:"rates"`
	Version      string          `json:"version"`
	// Storage is there when Deps.Storage is set.
	Storage *storageHealth `json:"storage,omitempty"`
	// Journal is there when an actor's journal does not replay.
	Journal *journalHealth `json:"journal,omitempty"`
	// Cluster is this node's view of its cluster, in cluster mode, for
	// the admin token.
	Cluster any `json:"cluster,omitempty"`
}

// journalHealth says that journals do not replay: their invoices or
// stores refuse every command until an operator repairs them (the log
// has each one at Error). The rest of the node serves, so the status
// code stays 200; which journals, for the admin token.
type journalHealth struct {
	Status string   `json:"status"`
	Faults int      `json:"faults"`
	Errors []string `json:"errors,omitempty"`
}

// componentHealth is one backend: ok, or degraded while it reports an
// error, with its reading.
type componentHealth struct {
	Status string `json:"status"`
	kassa.BackendInfo
}

// storageHealth says whether the store still writes: "ok",
// "unavailable" while it cannot be reached (PostgreSQL down), or
// "failed" once a write to the disk failed; with the reason, for the
// admin token.
type storageHealth struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// component returns the health of one backend reading; public leaves out
// what only the operator should read.
func component(info kassa.BackendInfo, public bool) componentHealth {
	c := componentHealth{Status: "ok", BackendInfo: info}
	if info.Error != "" {
		c.Status = "degraded"
	}
	if public {
		c.Error, c.Warning, c.Node, c.BestHash, c.AddressPool = "", "", "", "", nil
	}
	return c
}

// health needs no key. It answers 200 while the process serves, and 503
// with status "degraded" once storage failed (the process then exits to
// recover: docs/decisions.md, "A failed disk write stops the process");
// status "degraded" with 200 while a journal does not replay;
// synchronized says whether both backends are caught up. With the admin token (Authorization: Bearer)
// it adds the details: errors, warnings, the node and the cluster.
func (s *server) health(w http.ResponseWriter, r *http.Request) {
	public := !s.isAdmin(r)
	chain, lightning := s.chainProbe.read(r.Context()), s.lightningProbe.read(r.Context())
	rec := healthRecord{Status: "ok", Simulation: s.Simulated || s.Simulator != nil, Version: s.Version,
		Chain: component(chain, public), Lightning: component(lightning, public),
		Synchronized: chain.Synced && lightning.Synced}
	if s.Rates != nil {
		rec.Rates = s.Rates.Source()
	}
	if s.Cluster != nil && !public {
		rec.Cluster = s.Cluster()
	}
	if s.JournalFaults != nil {
		if faults := s.JournalFaults(); len(faults) > 0 {
			rec.Status = "degraded"
			rec.Journal = &journalHealth{Status: "faulty", Faults: len(faults)}
			if !public {
				rec.Journal.Errors = faults
			}
		}
	}
	status := http.StatusOK
	if s.Storage != nil {
		rec.Storage = &storageHealth{Status: "ok"}
		err, state := s.Storage.Err(), "failed"
		if err == nil {
			err, state = s.storageProbe.read(r.Context(), s.Storage), "unavailable"
		}
		if err != nil {
			rec.Status, status = "degraded", http.StatusServiceUnavailable
			rec.Storage = &storageHealth{Status: state}
			if !public {
				rec.Storage.Error = kassa.ErrorMessage(err)
				if state == "unavailable" {
					rec.Storage.Error = err.Error() // with the driver's reason
				}
			}
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, rec)
}

// isAdmin reports whether r carries the admin token.
func (s *server) isAdmin(r *http.Request) bool {
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return s.AdminToken != "" && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.AdminToken)) == 1
}

// availability is a store that can say whether it answers now
// (PostgreSQL: postgres.DB.Available).
type availability interface {
	Available(ctx context.Context) error
}

// storageProbeTTL is how long one reading of the store's availability
// serves health, and storageProbeTimeout how long a reading may take: a
// flood of health requests pings the database at most once a second.
const (
	storageProbeTTL     = time.Second
	storageProbeTimeout = time.Second
)

// storageProbe caches whether the store answers.
type storageProbe struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// read returns the store's availability, at most storageProbeTTL old;
// nil for a store that cannot say (Pebble).
func (p *storageProbe) read(ctx context.Context, st any) error {
	a, ok := st.(availability)
	if !ok {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && time.Since(p.at) < storageProbeTTL {
		return p.err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storageProbeTimeout)
	defer cancel()
	p.err, p.at = a.Available(ctx), time.Now()
	return p.err
}
