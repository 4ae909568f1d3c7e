package http

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/kassapay/kassa"
)

// statusByCode maps each error code to its HTTP status. It is the only
// place where codes become statuses.
var statusByCode = map[string]int{
	kassa.Invalid:          http.StatusBadRequest,
	kassa.Unauthorized:     http.StatusUnauthorized,
	kassa.PaymentRequired:  http.StatusPaymentRequired,
	kassa.Forbidden:        http.StatusForbidden,
	kassa.NotFound:         http.StatusNotFound,
	kassa.MethodNotAllowed: http.StatusMethodNotAllowed,
	kassa.Conflict:         http.StatusConflict,
	kassa.TooLarge:         http.StatusRequestEntityTooLarge,
	kassa.UnsupportedMedia: http.StatusUnsupportedMediaType,
	kassa.RateLimited:      http.StatusTooManyRequests,
	kassa.Unavailable:      http.StatusServiceUnavailable,
	kassa.Internal:         http.StatusInternalServerError,
}

// errorBody is the one JSON shape of every failure.
type errorBody struct {
	Code    string             `json:"code"`
	Message string             `json:"message"`
	Errors  []kassa.FieldError `json:"errors,omitempty"`
}

// errorResponse returns the status and body that err is shown as. An
// error that is no *kassa.Error, or whose code has no status, is an
// internal error: its cause goes to the log and the body says only
// "internal error".
func (s *server) errorResponse(r *http.Request, err error) (int, errorBody) {
	var e *kassa.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request canceled by the client", slog.String("err", err.Error()))
		} else {
			s.log.LogAttrs(r.Context(), slog.LevelError, "internal error",
				slog.String("method", r.Method), slog.String("err", err.Error()))
		}
		return http.StatusInternalServerError, errorBody{Code: kassa.Internal, Message: "internal error"}
	}
	status, ok := statusByCode[e.Code]
	if !ok || status == http.StatusInternalServerError {
		s.log.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("method", r.Method), slog.String("err", err.Error()))
		return http.StatusInternalServerError, errorBody{Code: kassa.Internal, Message: "internal error"}
	}
	return status, errorBody{Code: e.Code, Message: e.Message, Errors: e.Fields}
}

// writeError answers err in the JSON error shape.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := s.errorResponse(r, err)
	if status == http.StatusServiceUnavailable {
		// A passing condition (a backend or the database away, a
		// node lost): the caller may try again soon.
		w.Header().Set("Retry-After", retryAfterUnavailable)
	}
	writeJSON(w, status, body)
}

// retryAfterUnavailable is the Retry-After of a 503, in seconds.
const retryAfterUnavailable = "2"
