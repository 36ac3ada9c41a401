module quoteflowlab.dev/checkpoints/12

go 1.26

require (
	github.com/gorilla/mux v1.8.1
	go.uber.org/goleak v1.3.0
)
