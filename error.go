package kassa

import (
	"errors"
	"fmt"
)

// Error codes. The http package maps each to one status code.
const (
	Invalid          = "invalid"
	Unauthorized     = "unauthorized"
	Forbidden        = "forbidden"
	NotFound         = "not_found"
	Conflict         = "conflict"
	PaymentRequired  = "payment_required"
	Unavailable      = "unavailable"
	Internal         = "internal"
	TooLarge         = "too_large"
	UnsupportedMedia = "unsupported_media"
	RateLimited      = "rate_limited"
	MethodNotAllowed = "method_not_allowed"
)

// Error is an error that the service shows to its caller: a code and a
// message meant for a person. Fields lists the request fields at fault.
type Error struct {
	Code    string
	Message string
	Fields  []FieldError
}

// FieldError names one invalid request field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is matches another *Error with the same code and message, so that
// sentinels compare with errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == e.Message
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidFields returns an Invalid error listing every field error.
func InvalidFields(fields []FieldError) *Error {
	msg := "invalid request"
	if len(fields) > 0 {
		msg = fields[0].Field + ": " + fields[0].Message
		if len(fields) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(fields)-1)
		}
	}
	return &Error{Code: Invalid, Message: msg, Fields: fields}
}

// ErrorCode returns the code of err, or Internal when err is no *Error.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// ErrorMessage returns the message of err meant for a caller. Internal
// errors read "internal error" so that nothing of their cause leaks.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
