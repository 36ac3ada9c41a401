module quoteflowlab.dev/checkpoints/17

go 1.26.0

require (
	github.com/gorilla/mux v1.8.1
	go.uber.org/goleak v1.3.0
)

require (
	go.etcd.io/bbolt v1.4.3
	golang.org/x/sync v0.25.0
)

require golang.org/x/sys v0.29.0 // indirect
