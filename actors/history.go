package actors

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// The store actor writes a line of the store's history (kassa.HistoryLine)
// for each change of its settings, API keys, webhooks and refunds, in the
// batch of the change (commitLine): the line and the change are durable
// together or not at all. The line's actor is the call's (callContext).

// maxActorField bounds each field of an actor a call from another node
// carries.
const maxActorField = 320

// callActor is the kassa.Actor a routed call carries.
func callActor(a *protos.CallActor) kassa.Actor {
	clip := func(s string) string {
		if len(s) > maxActorField {
			return s[:maxActorField]
		}
		return s
	}
	return kassa.Actor{Kind: clip(a.GetKind()), ID: clip(a.GetId()), Label: clip(a.GetLabel()), Addr: clip(a.GetAddr())}
}

// storeChangeLine is the history line of a changeStore event, nil for an
// event the history does not show.
func storeChangeLine(ev *protos.StoreEvent, before, after *kassa.Store) *kassa.HistoryLine {
	switch k := ev.Kind.(type) {
	case *protos.StoreEvent_SettingsChanged:
		return &kassa.HistoryLine{Kind: kassa.HistorySettings, Action: kassa.ActionSettingsChanged, Detail: strings.Join(changedSettings(before, after), ", ")}
	case *protos.StoreEvent_ApiKeyCreated:
		detail := k.ApiKeyCreated.Label
		if p := k.ApiKeyCreated.Permissions; len(p) > 0 {
			detail += " (" + strings.Join(p, ", ") + ")"
		}
		return &kassa.HistoryLine{Kind: kassa.HistoryAPIKey, Action: kassa.ActionAPIKeyCreated, Subject: k.ApiKeyCreated.KeyId, Detail: detail}
	case *protos.StoreEvent_ApiKeyDeleted:
		return &kassa.HistoryLine{Kind: kassa.HistoryAPIKey, Action: kassa.ActionAPIKeyDeleted, Subject: k.ApiKeyDeleted.KeyId, Detail: keyLabel(before, k.ApiKeyDeleted.KeyId)}
	case *protos.StoreEvent_ApiKeyRevealed:
		// The account the reveal names stands for a call that carries
		// no actor (one from a node of an older version).
		return &kassa.HistoryLine{Kind: kassa.HistoryAPIKey, Action: kassa.ActionAPIKeyRevealed, Subject: k.ApiKeyRevealed.KeyId, Detail: keyLabel(before, k.ApiKeyRevealed.KeyId),
			Actor: kassa.Actor{Kind: kassa.ActorAccount, ID: k.ApiKeyRevealed.By}}
	case *protos.StoreEvent_MembersChanged:
		return memberLine(k.MembersChanged, before)
	}
	return nil
}

// memberLine is the history line of a change of the store's team, nil
// for an import. An invitation is named by the first characters of its
// id (its code's hash): never by its code.
func memberLine(ev *protos.MembersChanged, before *kassa.Store) *kassa.HistoryLine {
	switch ev.Action {
	case kassa.ActionInviteCreated, kassa.ActionInviteRevoked:
		return &kassa.HistoryLine{Kind: kassa.HistoryInvite, Action: ev.Action, Subject: shortInviteID(ev.InviteId), Detail: inviteRole(before, ev)}
	case kassa.ActionMemberRoleChanged:
		was, _ := before.MemberRole(ev.Email)
		return &kassa.HistoryLine{Kind: kassa.HistoryMember, Action: ev.Action, Subject: ev.Email, Detail: string(was) + " → " + ev.Role}
	case kassa.ActionMemberJoined:
		return &kassa.HistoryLine{Kind: kassa.HistoryMember, Action: ev.Action, Subject: ev.Email, Detail: inviteRole(before, ev)}
	case kassa.ActionMemberRemoved, kassa.ActionMemberLeft:
		role, _ := before.MemberRole(ev.Email)
		return &kassa.HistoryLine{Kind: kassa.HistoryMember, Action: ev.Action, Subject: ev.Email, Detail: string(role)}
	}
	return nil
}

// inviteRole is the role of the invitation ev names: the one it makes,
// else the one before holds.
func inviteRole(before *kassa.Store, ev *protos.MembersChanged) string {
	if i := slices.IndexFunc(before.Invites, func(in kassa.Invite) bool { return in.ID == ev.InviteId }); ev.Role == "" && i >= 0 {
		return string(before.Invites[i].Role)
	}
	return ev.Role
}

func shortInviteID(id string) string { return id[:min(len(id), 12)] }

func keyLabel(st *kassa.Store, keyID string) string {
	if i := slices.IndexFunc(st.APIKeys, func(k kassa.APIKey) bool { return k.ID == keyID }); i >= 0 {
		return st.APIKeys[i].Label
	}
	return ""
}

// internalSettings are the members of a store's document that are not
// settings a person changes (or are shown by lines of their own).
var internalSettings = map[string]bool{
	"id": true, "apiKeys": true, "createdAt": true, "nextAddressIndex": true, "freeAddressIndexes": true,
	"walletMinSendable": true, "walletMaxSendable": true, "topUpRefs": true,
	"members": true, "invites": true, "membersKept": true,
}

// changedSettings names the members of the store's document that differ
// between before and after, sorted: names only, never values (a value
// may be a credential).
func changedSettings(before, after *kassa.Store) []string {
	var b, a map[string]json.RawMessage
	if bj, err := json.Marshal(before); err != nil || json.Unmarshal(bj, &b) != nil {
		return nil
	}
	if aj, err := json.Marshal(after); err != nil || json.Unmarshal(aj, &a) != nil {
		return nil
	}
	var out []string
	for k, v := range a {
		if !internalSettings[k] && !bytes.Equal(v, b[k]) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && !internalSettings[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// webhookLine is the history line of a webhook's save or delete. The
// URL is shown without its query and fragment, which may hold a token.
func webhookLine(action string, w *kassa.Webhook) *kassa.HistoryLine {
	shown := w.URL
	if u, err := url.Parse(w.URL); err == nil {
		u.RawQuery, u.Fragment, u.User = "", "", nil
		shown = u.String()
	}
	return &kassa.HistoryLine{Kind: kassa.HistoryWebhook, Action: action, Subject: w.ID, Detail: shown}
}

// refundLine is the history line of a change of the store's refunds.
func refundLine(ch *kassa.RefundChange) *kassa.HistoryLine {
	if p := ch.Payout; p != nil {
		action := kassa.ActionPayoutClaimed
		switch p.State {
		case kassa.PayoutApproved:
			action = kassa.ActionPayoutApproved
		case kassa.PayoutCancelled:
			action = kassa.ActionPayoutCancelled
		case kassa.PayoutInProgress:
			action = kassa.ActionPayoutSending
		case kassa.PayoutFailed:
			action = kassa.ActionPayoutFailed
		case kassa.PayoutCompleted:
			action = kassa.ActionPayoutCompleted
			if p.MarkedPaid {
				action = kassa.ActionPayoutMarkedPaid
			}
		}
		detail := p.Claimed.String() + " " + string(p.Currency)
		if p.Amount > 0 {
			detail += " (" + strconv.FormatInt(int64(p.Amount), 10) + " sat)"
		}
		return &kassa.HistoryLine{Kind: kassa.HistoryRefund, Action: action, Subject: p.ID, Detail: detail}
	}
	if pp := ch.PullPayment; pp != nil {
		detail := pp.Amount.String() + " " + string(pp.Currency)
		if pp.InvoiceID != "" {
			detail += ", invoice " + pp.InvoiceID
		}
		return &kassa.HistoryLine{Kind: kassa.HistoryRefund, Action: kassa.ActionPullPaymentCreated, Subject: pp.ID, Detail: detail}
	}
	return nil
}
