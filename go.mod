module quoteflowlab.dev

go 1.26.0

require (
	github.com/gorilla/mux v1.8.1 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
)
