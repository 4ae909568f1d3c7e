// Package test provides helpers for testing cluster providers.
package test
