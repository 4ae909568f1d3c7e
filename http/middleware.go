package http

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the tracer of this package.
const tracerName = "github.com/kassapay/kassa/http"

// statusWriter remembers the status code and the number of body bytes
// written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client, for streamed lists.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe starts a span per request, named after the method and the chi
// route pattern, passes its context down to the services, and writes one
// access-log line (debug when the status is below 400, info otherwise). Neither the path nor any header is logged, so that no
// key or id taken from the caller reaches the logs.
func (s *server) observe(next http.Handler) http.Handler {
	tracer := otel.Tracer(tracerName)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.method", r.Method)))
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			route := ""
			if rctx := chi.RouteContext(r.Context()); rctx != nil {
				route = rctx.RoutePattern()
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			if p := recover(); p != nil {
				// A handler aborted the response (http.ErrAbortHandler):
				// record it and let net/http drop the connection.
				span.SetStatus(codes.Error, fmt.Sprint(p))
				span.End()
				s.log.LogAttrs(ctx, slog.LevelWarn, "http request aborted",
					slog.String("method", r.Method), slog.String("route", route),
					slog.Int("status", status), slog.Duration("duration", time.Since(start)))
				panic(p)
			}
			if route != "" {
				span.SetName(r.Method + " " + route)
				span.SetAttributes(attribute.String("http.route", route))
			} else {
				route = "unmatched"
			}
			span.SetAttributes(attribute.Int("http.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
			s.countRequest(r.Method, route, status, time.Since(start))
			// A request that succeeded is a debug line: at the default
			// level a create logs only its invoice event, and the
			// request metrics count every request. Refusals and
			// failures stay at info.
			level := slog.LevelDebug
			if status >= 400 {
				level = slog.LevelInfo
			}
			s.log.LogAttrs(ctx, level, "http request",
				slog.String("method", r.Method), slog.String("route", route),
				slog.Int("status", status), slog.Duration("duration", time.Since(start)),
				slog.Int64("bytes", sw.bytes))
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// recoverPanic turns a panic of a handler into a 500 with the cause and
// stack in the log. http.ErrAbortHandler passes through: it is how a
// streamed list that fails midway drops the connection.
func (s *server) recoverPanic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p)
			}
			s.log.ErrorContext(r.Context(), "panic in handler", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
				panic(http.ErrAbortHandler) // the response has begun: drop it
			}
			s.writeError(w, r, fmt.Errorf("panic: %v", p))
		}()
		next.ServeHTTP(w, r)
	})
}
