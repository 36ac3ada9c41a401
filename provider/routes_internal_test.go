package provider

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSupplierFirstAnswersAsTheRouter: the short cut in front of the router
// answers every request exactly as the router alone does (status, Location
// of a redirect, body), for the supplier route and the paths next to it.
func TestSupplierFirstAnswersAsTheRouter(t *testing.T) {
	paths := []string{
		"/quotes/boreal?sku=KB-001",
		"/quotes/atlas?sku=KB-001&scenario=normal",
		"/quotes/cedar?sku=KB-001&scenario=slow&qty=3",
		"/quotes/delta?sku=KB-001",
		"/quotes/boreal?sku=NOPE",
		"/quotes/boreal?sku=KB-001&scenario=sleepy",
		"/quotes/bo%72eal?sku=KB-001",
		"/quotes/a%2Fb?sku=KB-001",
		"/quotes/a..b?sku=KB-001",
		"/quotes/",
		"/quotes",
		"/quotes/.",
		"/quotes/..",
		"/quotes//boreal?sku=KB-001",
		"/quotes/boreal/?sku=KB-001",
		"/quotes/./boreal?sku=KB-001",
		"/quotes/boreal/x?sku=KB-001",
		"/quotesboreal?sku=KB-001",
		"/Quotes/boreal?sku=KB-001",
		"/health",
		"/nowhere",
	}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, "get"} {
		for _, path := range paths {
			fast, slow := New(Options{}), New(Options{})
			got := serve(fast.Routes(), method, path)
			want := serve(slow.router(slow.counted(slow.quote)), method, path)
			if got.Code != want.Code || got.Header().Get("Location") != want.Header().Get("Location") || got.Body.String() != want.Body.String() {
				t.Errorf("%s %s: Routes answers %d %q %q, the router alone %d %q %q", method, path,
					got.Code, got.Header().Get("Location"), got.Body.String(),
					want.Code, want.Header().Get("Location"), want.Body.String())
			}
			if got, want := fast.Snapshot().Total, slow.Snapshot().Total; got != want {
				t.Errorf("%s %s: counted %d supplier requests through Routes, %d through the router alone", method, path, got, want)
			}
		}
	}
}

func serve(h http.Handler, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}
