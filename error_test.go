package kassa

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestError(t *testing.T) {
	err := Errorf(NotFound, "no invoice %s", "x")
	if err.Error() != "not_found: no invoice x" {
		t.Errorf("Error() = %q", err.Error())
	}
	wrapped := fmt.Errorf("get invoice: %w", err)
	if ErrorCode(wrapped) != NotFound || ErrorMessage(wrapped) != "no invoice x" {
		t.Errorf("wrapped: code %s, message %q", ErrorCode(wrapped), ErrorMessage(wrapped))
	}
	if !errors.Is(wrapped, Errorf(NotFound, "no invoice x")) {
		t.Error("errors.Is does not match the same code and message")
	}
	if errors.Is(wrapped, Errorf(NotFound, "no invoice y")) || errors.Is(wrapped, Errorf(Invalid, "no invoice x")) {
		t.Error("errors.Is matches another code or message")
	}
	// Anything else is internal, and its cause is not shown.
	if ErrorCode(io.EOF) != Internal || ErrorMessage(io.EOF) != "internal error" {
		t.Errorf("io.EOF: code %s, message %q", ErrorCode(io.EOF), ErrorMessage(io.EOF))
	}
	if ErrorCode(ErrNothingChanged) != Internal {
		t.Errorf("ErrNothingChanged has code %s", ErrorCode(ErrNothingChanged))
	}
}

func TestInvalidFields(t *testing.T) {
	for _, tc := range []struct {
		fields []FieldError
		want   string
	}{
		{nil, "invalid request"},
		{[]FieldError{{"amount", "is required"}}, "amount: is required"},
		{[]FieldError{{"amount", "is required"}, {"title", "is required"}, {"currency", "unknown"}}, "amount: is required (and 2 more)"},
	} {
		err := InvalidFields(tc.fields)
		if err.Code != Invalid || err.Message != tc.want || len(err.Fields) != len(tc.fields) {
			t.Errorf("InvalidFields(%v) = %+v, want message %q", tc.fields, err, tc.want)
		}
	}
}
