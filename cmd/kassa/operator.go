package main

import (
	nethttp "net/http"

	"github.com/kassapay/kassa/actors"
	"github.com/kassapay/kassa/operator"
)

// operatorPage is the operator page over this service's actors and store.
func (m *Main) operatorPage() nethttp.Handler {
	d := operator.Deps{Reader: m.db, Journal: m.db, Clock: m.Clock,
		Actors: []interface{ ActorStats() []actors.ActorStat }{m.sys.Runtime}}
	if m.forwarder != nil {
		d.Actors = append(d.Actors, m.forwarder)
		d.Forwards = m.db
	}
	return operator.New(d)
}
