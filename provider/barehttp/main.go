// Command barehttp serves boreal's normal KB-001 body from a bare net/http
// handler: the baseline the provider lab's throughput is compared with
// (see provider/README.md, "Performance").
//
//	go run ./provider/barehttp --addr 127.0.0.1:9111
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"quoteflowlab.dev/provider"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9111", "address to serve on")
	flag.Parse()
	// The exact bytes the provider serves for boreal, normal scenario.
	rec := httptest.NewRecorder()
	provider.New(provider.Options{}).Routes().ServeHTTP(rec,
		httptest.NewRequest(http.MethodGet, "/quotes/boreal?sku=KB-001&scenario=normal", nil))
	body := rec.Body.Bytes()
	fmt.Printf("bare net/http serving %d bytes on http://%s/ (any path)\n", len(body), *addr)
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})))
}
