package http

import (
	"errors"
	"net/http"
	"time"
)

// listByID answers a list whose reader has no cursor of its own (pay
// links, webhooks): walk calls its function for every item in list
// order, and the page is cut here. The items are filtered by q's
// startDate and endDate on their creation time, and the cursor is the id
// of the last item of the previous page (docs/api.md, Conventions); an
// unknown cursor is a 400.
func listByID[T any](s *server, w http.ResponseWriter, r *http.Request, walk func(func(T) error) error, id func(T) string, created func(T) time.Time, record func(T) any) {
	q, err := listQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list := newListWriter(w, q.Limit > 0)
	skipping := q.Cursor != ""
	taken, last, next := 0, "", ""
	err = walk(func(item T) error {
		at := created(item)
		switch {
		case skipping:
			skipping = id(item) != q.Cursor
			return nil
		case !q.From.IsZero() && at.Before(q.From), !q.To.IsZero() && at.After(q.To):
			return nil
		case q.Limit > 0 && taken == q.Limit:
			next = last
			return errPageFull
		}
		taken, last = taken+1, id(item)
		return list.add(record(item))
	})
	if errors.Is(err, errPageFull) {
		err = nil
	}
	if err == nil && skipping {
		err = invalidField("cursor", "is not a cursor of this API")
	}
	s.finishList(list, r, next, err)
}

// errPageFull stops a walk once a page is full.
var errPageFull = errors.New("page full")
