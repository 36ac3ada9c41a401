module quoteflowlab.dev/checkpoints/19

go 1.26.0

require (
	github.com/gorilla/mux v1.8.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/DataDog/sketches-go v1.4.8
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/redis/go-redis/v9 v9.23.0
	go.etcd.io/bbolt v1.4.3
	golang.org/x/sync v0.25.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
