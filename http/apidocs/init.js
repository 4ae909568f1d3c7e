// Renders /api/v1/openapi.json with Redoc (vendored; licence at
// /docs/api/LICENSE.txt). Kept out of the HTML so that the page's
// Content-Security-Policy allows scripts from this origin only.
Redoc.init("/api/v1/openapi.json", {
  expandResponses: "200",
  jsonSampleExpandLevel: 3,
  hideDownloadButton: false,
  sortPropsAlphabetically: false,
}, document.getElementById("redoc"));
