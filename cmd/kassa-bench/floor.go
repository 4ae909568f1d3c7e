package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-chi/chi/v5"
)

// runFloor serves the floor: chi, Pebble, one synced write per request.
func runFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	dir := fs.String("data", "", "Pebble directory")
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := pebble.Open(*dir, &pebble.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	r := chi.NewRouter()
	r.Post("/api/v1/stores/{storeId}/invoices", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var id [16]byte
		rand.Read(id[:])
		key := hex.EncodeToString(id[:])
		if err := db.Set([]byte(chi.URLParam(r, "storeId")+"/"+key), body, pebble.Sync); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"`+key+`"}`)
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if err := http.Serve(ln, r); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
