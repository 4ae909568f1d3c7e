package http

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestWriteJSONBuffersAreNotShared writes responses of many sizes from
// many goroutines at once, through writeJSON's pooled buffers: each
// response is its own value whole, with its Content-Length, and a
// response larger than the pool keeps is answered the same.
func TestWriteJSONBuffersAreNotShared(t *testing.T) {
	type value struct {
		N    int    `json:"n"`
		Text string `json:"text"`
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				n := g*1000 + i
				size := (n * 37) % 9000
				if i == 100 {
					size = 2 * maxPooledJSON
				}
				want := value{N: n, Text: strings.Repeat(string(rune('a'+n%26)), size)}
				w := httptest.NewRecorder()
				writeJSON(w, 201, want)
				var got value
				if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got != want {
					t.Errorf("response %d: %v, %d bytes of text", n, err, len(got.Text))
					return
				}
				if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(w.Body.Len()) || w.Code != 201 {
					t.Errorf("response %d: status %d, Content-Length %q for %d bytes", n, w.Code, cl, w.Body.Len())
					return
				}
			}
		})
	}
	wg.Wait()
}
