package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/kassapay/kassa"
)

// TestWebhookBodyAuthorizedEvents checks authorizedEvents, the form shop
// plugins send, as an alias of events on create and update.
func TestWebhookBodyAuthorizedEvents(t *testing.T) {
	cases := []struct {
		body   string
		create bool
		want   string // the events, or "unchanged", or the error fields
	}{
		{`{"url":"https://a.example","authorizedEvents":{"everything":false,"specificEvents":["Settled","Expired"]}}`, true, "[Settled Expired]"},
		{`{"url":"https://a.example","authorizedEvents":{"everything":true}}`, true, "[New Processing Settled Expired]"},
		{`{"url":"https://a.example","authorizedEvents":{"everything":true,"specificEvents":["Settled"]}}`, true, "[New Processing Settled Expired]"},
		{`{"url":"https://a.example","authorizedEvents":{"everything":false}}`, true, "[]"},
		{`{"url":"https://a.example","authorizedEvents":{}}`, true, "[]"},
		{`{"url":"https://a.example","authorizedEvents":{"specificEvents":["Invalid","Settled"]}}`, true, "[Invalid Settled]"},
		{`{"url":"https://a.example","authorizedEvents":{"specificEvents":"Processing,Settled"}}`, true, "[Processing Settled]"},
		{`{"url":"https://a.example","authorizedEvents":null}`, true, "[New Processing Settled Expired]"},
		{`{"url":"https://a.example","events":["Settled"],"authorizedEvents":{"specificEvents":["Settled"]}}`, true, "[Settled]"},
		{`{"url":"https://a.example","events":["Invalid"]}`, true, "[Invalid]"},
		{`{"authorizedEvents":{"everything":false,"specificEvents":["Expired"]}}`, false, "[Expired]"},
		{`{"enabled":false}`, false, "unchanged"},
		// Refused, with the field named.
		{`{"url":"https://a.example","events":["New"],"authorizedEvents":{"specificEvents":["Settled"]}}`, true, "error authorizedEvents"},
		{`{"url":"https://a.example","authorizedEvents":{"specificEvents":["InvoiceSettled"]}}`, true, "error authorizedEvents.specificEvents"},
		{`{"url":"https://a.example","authorizedEvents":{"specificEvents":{"a":1}}}`, true, "error authorizedEvents.specificEvents"},
		{`{"url":"https://a.example","authorizedEvents":["Settled"]}`, true, "error authorizedEvents"},
		{`{"authorizedEvents":{"everything":"yes"}}`, false, "error authorizedEvents"},
	}
	for _, c := range cases {
		var body webhookBody
		if err := json.Unmarshal([]byte(c.body), &body); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		in, err := body.webhookInput(c.create)
		var got string
		switch {
		case err != nil:
			got = "error"
			var e *kassa.Error
			if errors.As(err, &e) {
				for _, f := range e.Fields {
					got += " " + f.Field
				}
			}
		case !in.EventsGiven && !c.create:
			got = "unchanged"
		default:
			got = fmt.Sprint(in.Events)
		}
		if got != c.want {
			t.Errorf("%s (create %v): %s, want %s", c.body, c.create, got, c.want)
		}
	}
}
