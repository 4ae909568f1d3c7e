package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// CheckWebhook returns what in a request Kassa sent to a webhook URL does
// not match the document's webhooks section: the URL check before
// registration (webhookUrlValidation), a full event (invoiceEvent) or a
// redelivered one (invoiceEventRedelivery), headers included.
func CheckWebhook(req *http.Request, body []byte) []string {
	s, err := load()
	if err != nil {
		return []string{err.Error()}
	}
	var probe struct {
		Purpose string `json:"purpose"`
	}
	_ = json.Unmarshal(body, &probe)
	names := []string{"invoiceEvent", "invoiceEventRedelivery"}
	if probe.Purpose != "" {
		names = []string{"webhookUrlValidation"}
	}
	var problems []string
	for _, name := range names {
		item := s.doc.Webhooks[name]
		if item == nil || item.GetOperation(req.Method) == nil {
			problems = append(problems, fmt.Sprintf("%s %s is not a webhook %s of the document", req.Method, req.URL.Path, name))
			continue
		}
		vreq := req.Clone(req.Context())
		vreq.Body = io.NopCloser(bytes.NewReader(body))
		vreq.ContentLength = int64(len(body))
		in := &openapi3filter.RequestValidationInput{
			Request: vreq,
			Route: &routers.Route{Spec: s.doc, PathItem: item, Method: req.Method,
				Operation: item.GetOperation(req.Method)},
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
		}
		err := openapi3filter.ValidateRequest(req.Context(), in)
		if err == nil {
			return nil
		}
		problems = append(problems, fmt.Sprintf("not a %s: %v", name, err))
	}
	return problems
}

// WebhookReceiver returns h with every request it receives checked by
// CheckWebhook; a mismatch fails t.
func WebhookReceiver(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	if _, err := load(); err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readAll(r.Body)
		r.Body = replay(body, err)
		if err == nil {
			if problems := CheckWebhook(r, body); len(problems) > 0 {
				t.Errorf("webhook request %s %s does not match the OpenAPI document (body %.1024s):\n  %s",
					r.Method, r.URL.Path, body, strings.Join(problems, "\n  "))
			}
		}
		h.ServeHTTP(w, r)
	})
}
