package actors

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// ChangeMembers makes ch, a change of the store's team, in the store's
// actor: its event, the store's snapshot and its history line are one
// batch (kassa.Store.WithMemberChange says what is refused). It
// answers the store as changed.
func (s *Service) ChangeMembers(ctx context.Context, storeID string, ch kassa.MemberChange) (*kassa.Store, error) {
	if out, ok, err := cmdChangeMembers.route(ctx, s.cluster, storeID, func() *protos.ChangeMembersCall {
		return &protos.ChangeMembersCall{Change: toDoc[*protos.MemberChangeDoc](&ch)}
	}); ok {
		return out, err
	}
	ctx, span := s.tracer.Start(ctx, "actors.ChangeMembers", trace.WithAttributes(attribute.String("store.id", storeID)))
	defer span.End()
	res, err := s.ask(ctx, storeID, &changeStore{call: callOf(ctx), change: func(cur *kassa.Store) (*kassa.Store, *protos.StoreEvent, error) {
		next, err := cur.WithMemberChange(ch, s.cfg.Clock.Now())
		if err != nil {
			return nil, nil, err
		}
		return next, &protos.StoreEvent{Kind: &protos.StoreEvent_MembersChanged{MembersChanged: &protos.MembersChanged{
			Action: ch.Action, Email: ch.Email, Role: string(ch.Role), InviteId: ch.InviteID}}}, nil
	}})
	if err != nil {
		return nil, err
	}
	return res.(*kassa.Store), nil
}
