// Package apitest checks the HTTP exchanges of the tests against the
// OpenAPI document of the API (http/apidocs), so that the document cannot
// drift from the server: the handler tests of package http wrap their
// handler with Handler, the end-to-end tests of cmd/kassa send their
// requests through Do. Every exchange under /api/v1 and /admin/v1 is
// checked: the response's status must be one the operation documents,
// and its headers and body must match; a request the document calls
// invalid must not succeed. A mismatch fails the test.
//
// The document is loaded and validated once per test process. Which
// (route, method, status) were seen is recorded, and with
// KASSA_OPENAPI_COVERAGE set to a directory, written there, so that
// TestOpenAPICoverage can list what no suite exercised (see the Makefile).
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/kassapay/kassa/http/apidocs"
)

// Prefixes are the path prefixes the document describes. Other paths (the
// customer pages, the reference page) are not checked.
var Prefixes = []string{"/api/v1/", "/admin/v1/"}

// route is one path template of the document.
type route struct {
	template string
	re       *regexp.Regexp
	params   []string
	item     *openapi3.PathItem
}

// spec is the loaded document.
type spec struct {
	doc    *openapi3.T
	routes []route
	errs   *openapi3.SchemaRef // components.schemas.Error
}

// Document is an OpenAPI document that tests check exchanges against.
// The Coinsnap API's (http/apidocs) is the package's own: Check, Handler,
// Do and Load use it. Another API's is made with NewDocument.
type Document struct {
	data     []byte
	base     string   // the path the API is mounted under, stripped before matching
	prefixes []string // nil: Prefixes
	errName  string   // components.schemas entry of the error body
	coverage bool     // write what was seen to CoverageEnv

	once    sync.Once
	loaded  *spec
	loadErr error

	seenMu sync.Mutex
	seen   map[string]bool
}

var coinsnap = &Document{data: apidocs.OpenAPI, errName: "Error", coverage: true}

// NewDocument returns the OpenAPI document data of an API mounted under
// base (its paths are matched after base is stripped): exchanges under
// base+prefix for each of prefixes are checked; an answer outside its
// operations must have the body of components.schemas[errorSchema].
func NewDocument(data []byte, base, errorSchema string, prefixes ...string) *Document {
	return &Document{data: data, base: base, prefixes: prefixes, errName: errorSchema}
}

var paramRE = regexp.MustCompile(`\{([^}/]+)\}`)

// Load returns the Coinsnap API's document, loaded and validated once per
// process.
func Load() (*openapi3.T, error) { return coinsnap.Load() }

// Load returns the document, loaded and validated once per process.
func (d *Document) Load() (*openapi3.T, error) {
	s, err := d.load()
	if err != nil {
		return nil, err
	}
	return s.doc, nil
}

func load() (*spec, error) { return coinsnap.load() }

func (d *Document) load() (*spec, error) {
	d.once.Do(func() {
		var loadErr error
		defer func() { d.loadErr = loadErr }()
		doc, err := openapi3.NewLoader().LoadFromData(d.data)
		if err != nil {
			loadErr = fmt.Errorf("apitest: load the OpenAPI document: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			loadErr = fmt.Errorf("apitest: the OpenAPI document is invalid: %w", err)
			return
		}
		s := &spec{doc: doc, errs: doc.Components.Schemas[d.errName]}
		if s.errs == nil {
			loadErr = fmt.Errorf("apitest: the OpenAPI document has no schema %s", d.errName)
			return
		}
		for template, item := range doc.Paths.Map() {
			r := route{template: template, item: item}
			var pattern strings.Builder
			pattern.WriteString("^")
			last := 0
			for _, loc := range paramRE.FindAllStringIndex(template, -1) {
				pattern.WriteString(regexp.QuoteMeta(template[last:loc[0]]) + "([^/]+)")
				last = loc[1]
			}
			pattern.WriteString(regexp.QuoteMeta(template[last:]) + "$")
			r.re = regexp.MustCompile(pattern.String())
			for _, m := range paramRE.FindAllStringSubmatch(template, -1) {
				r.params = append(r.params, m[1])
			}
			s.routes = append(s.routes, r)
		}
		// Literal segments win over parameters: try templates with fewer
		// parameters first.
		slices.SortFunc(s.routes, func(a, b route) int {
			if d := len(a.params) - len(b.params); d != 0 {
				return d
			}
			return strings.Compare(a.template, b.template)
		})
		d.loaded = s
	})
	return d.loaded, d.loadErr
}

// find returns the route of path and its parameters. A trailing slash is
// served as the path without it.
func (s *spec) find(path string) (*route, map[string]string) {
	for _, p := range []string{path, strings.TrimSuffix(path, "/")} {
		for i := range s.routes {
			r := &s.routes[i]
			m := r.re.FindStringSubmatch(p)
			if m == nil {
				continue
			}
			params := make(map[string]string, len(r.params))
			for j, name := range r.params {
				params[name] = m[j+1]
			}
			return r, params
		}
	}
	return nil, nil
}

// Exchange is one request and the response it got.
type Exchange struct {
	Request     *http.Request // its Body is not read: see RequestBody
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
}

// described reports whether path is one the document describes.
func (d *Document) described(path string) bool {
	prefixes := d.prefixes
	if prefixes == nil {
		prefixes = Prefixes
	}
	rest, ok := strings.CutPrefix(path, d.base)
	if !ok {
		return false
	}
	for _, p := range prefixes {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}

// Check returns what in x does not match the document (nil when all
// does), and records the (route, method, status) for coverage.
func Check(x Exchange) []string { return coinsnap.Check(x) }

// Check returns what in x does not match the document d (nil when all
// does), and records the (route, method, status) for d.Seen.
func (d *Document) Check(x Exchange) []string {
	s, err := d.load()
	if err != nil {
		return []string{err.Error()}
	}
	req := x.Request
	if !d.described(req.URL.Path) {
		return nil
	}
	r, params := s.find(strings.TrimPrefix(req.URL.Path, d.base))
	if r == nil {
		// No route: only the not-found answer is right.
		return s.checkError(x, "no route of the document", http.StatusNotFound)
	}
	op := r.item.GetOperation(req.Method)
	if op == nil {
		// The path exists, the method does not: 405 with Allow, or the
		// key checks that run first.
		problems := s.checkError(x, "method not in the document", http.StatusMethodNotAllowed,
			http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound)
		if x.Status == http.StatusMethodNotAllowed && x.Header.Get("Allow") == "" {
			problems = append(problems, "405 without an Allow header")
		}
		return problems
	}
	d.record(req.Method, r.template, x.Status)

	vreq := req.Clone(req.Context())
	vreq.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	vreq.ContentLength = int64(len(x.RequestBody))
	in := &openapi3filter.RequestValidationInput{
		Request:    vreq,
		PathParams: params,
		Route: &routers.Route{Spec: s.doc, Path: r.template, PathItem: r.item,
			Method: req.Method, Operation: op},
		Options: &openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			MultiError:         true,
		},
	}
	var problems []string
	if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil && x.Status >= 200 && x.Status < 300 {
		// A request the document calls invalid may be refused (the
		// tests send bad input on purpose); it must not succeed.
		problems = append(problems, fmt.Sprintf("answered %d to a request the document calls invalid: %v", x.Status, err))
	}
	in.Options = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 x.Status,
		Header:                 x.Header,
		Body:                   io.NopCloser(bytes.NewReader(x.Body)),
		Options:                in.Options,
	}
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		problems = append(problems, fmt.Sprintf("response does not match %s %s: %v", req.Method, r.template, err))
	}
	return problems
}

// checkError checks an answer outside the document's operations: one of
// statuses, with the Error body.
func (s *spec) checkError(x Exchange, why string, statuses ...int) []string {
	if !slices.Contains(statuses, x.Status) {
		return []string{fmt.Sprintf("%s: answered %d, want one of %v", why, x.Status, statuses)}
	}
	var v any
	if err := json.Unmarshal(x.Body, &v); err != nil {
		return []string{fmt.Sprintf("%s: the %d body is not JSON: %v", why, x.Status, err)}
	}
	if err := s.errs.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return []string{fmt.Sprintf("%s: the %d body is not an Error: %v", why, x.Status, err)}
	}
	return nil
}

// CoverageEnv names the directory where each test process appends what it
// exercised.
const CoverageEnv = "KASSA_OPENAPI_COVERAGE"

// record notes "METHOD template status" as seen by this process.
func (d *Document) record(method, template string, status int) {
	key := method + " " + template + " " + strconv.Itoa(status)
	d.seenMu.Lock()
	defer d.seenMu.Unlock()
	if d.seen[key] {
		return
	}
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	d.seen[key] = true
	dir := os.Getenv(CoverageEnv)
	if !d.coverage || dir == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(os.Getpid())+".txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return // coverage is reported, not enforced, by the process that writes it
	}
	defer f.Close()
	_, _ = f.WriteString(key + "\n")
}

// Seen returns what this process exercised of d, as "METHOD template
// status", sorted.
func (d *Document) Seen() []string {
	d.seenMu.Lock()
	defer d.seenMu.Unlock()
	out := make([]string, 0, len(d.seen))
	for k := range d.seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// report fails t with the problems of x.
func report(t testing.TB, x Exchange, problems []string) {
	if len(problems) == 0 {
		return
	}
	body := x.Body
	if len(body) > 2048 {
		body = body[:2048]
	}
	t.Errorf("OpenAPI document mismatch on %s %s (status %d, body %s):\n  %s",
		x.Request.Method, x.Request.URL.RequestURI(), x.Status, body, strings.Join(problems, "\n  "))
}
