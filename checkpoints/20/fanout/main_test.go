package fanout

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test in the package ends with no goroutine left behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
