package http

// Spans records every span of this package's tests (TestMain), for the
// end-to-end tests of package http_test.
var Spans = spans
