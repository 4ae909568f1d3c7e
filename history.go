package kassa

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// A store's history says who changed what of the store, when and from
// which address: its settings, API keys (every reveal too), webhooks,
// refunds, members and roles, and invitations (member.go). A line is
// written by the store actor in the batch of the change it records,
// keyed by the sequence number of the change's event in the store's
// journal: the line is durable exactly when the change is
// (docs/decisions.md, "A store's history").

// Actor is who makes a change, by id and label, never by secret: a
// dashboard account (its email) or an API key (its id and label). The
// zero Actor is Kassa itself (a payout sent, a customer's claim). Addr
// is the client's IP address as the HTTP layer determined it.
type Actor struct {
	Kind  string `json:"kind,omitempty"`
	ID    string `json:"id,omitempty"`
	Label string `json:"label,omitempty"`
	Addr  string `json:"addr,omitempty"`
}

// Kinds of Actor.
const (
	ActorAccount = "account"
	ActorAPIKey  = "apikey"
)

type actorKey struct{}
type clientAddrKey struct{}

// WithActor returns ctx carrying a: the changes made in ctx are
// recorded as a's.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// WithClientAddr returns ctx carrying the client's address, which
// ActorFrom adds to the principal.
func WithClientAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

// ActorFrom returns who acts in ctx: the Actor WithActor set, else the
// request's Principal with the client's address; zero when neither.
func ActorFrom(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		return a
	}
	addr, _ := ctx.Value(clientAddrKey{}).(string)
	p := PrincipalFrom(ctx)
	if p == nil {
		return Actor{Addr: addr}
	}
	return Actor{Kind: p.Kind, ID: p.Name, Label: p.Label, Addr: addr}
}

// Kinds of HistoryLine: what a filter of the history chooses from.
const (
	HistorySettings = "settings"
	HistoryAPIKey   = "apikey"
	HistoryWebhook  = "webhook"
	HistoryRefund   = "refund"
	HistoryMember   = "member"
	HistoryInvite   = "invite"
)

// HistoryKinds are the kinds of HistoryLine, in the order a filter
// lists them.
var HistoryKinds = []string{HistorySettings, HistoryAPIKey, HistoryWebhook, HistoryRefund, HistoryMember, HistoryInvite}

// Actions of HistoryLine.
const (
	ActionSettingsChanged    = "settings.changed"
	ActionAPIKeyCreated      = "apikey.created"
	ActionAPIKeyDeleted      = "apikey.deleted"
	ActionAPIKeyRevealed     = "apikey.revealed"
	ActionWebhookCreated     = "webhook.created"
	ActionWebhookUpdated     = "webhook.updated"
	ActionWebhookDeleted     = "webhook.deleted"
	ActionPullPaymentCreated = "pullpayment.created"
	ActionPayoutClaimed      = "payout.claimed"
	ActionPayoutApproved     = "payout.approved"
	ActionPayoutCancelled    = "payout.cancelled"
	ActionPayoutMarkedPaid   = "payout.markedpaid"
	ActionPayoutSending      = "payout.sending"
	ActionPayoutCompleted    = "payout.completed"
	ActionPayoutFailed       = "payout.failed"
)

// HistoryLine is one change of a store. Seq is the sequence number of
// the change's event in the store's journal; Subject the id of what
// changed (a key, a webhook, a payout); Detail a short description
// without secrets (a key's label, a webhook's URL, an amount).
type HistoryLine struct {
	StoreID string    `json:"storeId"`
	Seq     uint64    `json:"seq"`
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Action  string    `json:"action"`
	Subject string    `json:"subject,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Actor   Actor     `json:"actor"`
}

// HistoryBatch is a Batch that writes history lines. A journal whose
// batches are not HistoryBatches cannot record a change that has a
// history line: the store actor refuses it.
type HistoryBatch interface {
	PutHistory(l *HistoryLine)
}

// MaxHistoryPage is the most lines one page of a store's history holds;
// a larger HistoryQuery.Limit is cut to it.
const MaxHistoryPage = 200

// HistoryQuery selects lines of a store's history, newest first: of
// Kind (empty: any), by an actor whose ID is Actor (empty: any), at or
// after From and before To (zero: open). Limit zero or above
// MaxHistoryPage means MaxHistoryPage; Cursor continues a page.
type HistoryQuery struct {
	Kind     string
	Actor    string
	From, To time.Time
	Limit    int
	Cursor   string
}

// PageSize is q's Limit within (0, MaxHistoryPage].
func (q HistoryQuery) PageSize() int {
	if q.Limit <= 0 || q.Limit > MaxHistoryPage {
		return MaxHistoryPage
	}
	return q.Limit
}

// Matches reports whether l is in q's selection (its cursor aside).
func (q HistoryQuery) Matches(l *HistoryLine) bool {
	return (q.Kind == "" || l.Kind == q.Kind) && (q.Actor == "" || l.Actor.ID == q.Actor) &&
		(q.From.IsZero() || !l.At.Before(q.From)) && (q.To.IsZero() || l.At.Before(q.To))
}

// HistoryCursor is the cursor of the page after the line of sequence
// number seq; HistoryCursorSeq reads it back (Invalid when malformed).
func HistoryCursor(seq uint64) string {
	return base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, seq))
}

// HistoryCursorSeq returns the sequence number cursor continues below,
// or 0 for the empty cursor (the first page).
func HistoryCursorSeq(cursor string) (uint64, error) {
	if cursor == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) != 8 || binary.BigEndian.Uint64(b) == 0 {
		return 0, Errorf(Invalid, "malformed history cursor")
	}
	return binary.BigEndian.Uint64(b), nil
}

// HistoryReader reads a store's history.
type HistoryReader interface {
	// History calls fn for each line of the store's history that q
	// selects, newest first, at most q.PageSize() of them, and returns
	// the cursor of the next page when there are more.
	History(ctx context.Context, storeID string, q HistoryQuery, fn func(*HistoryLine) error) (next string, err error)
}
