package quota_test

import (
	"context"
	"github.com/redis/go-redis/v9"
	"testing"

	"go.uber.org/goleak"
)

// Every test in the package ends with no goroutine left behind.
// go-redis logs every failed dial; the tests check the errors themselves.
func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
