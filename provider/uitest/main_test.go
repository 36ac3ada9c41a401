package uitest_test

import (
	"os"
	"testing"

	"quoteflowlab.dev/kit/testpar"
)

// TestMain lets every browser test run at once unless go test is given
// -parallel: each mostly waits for its Chromium and its lab (the default,
// one per CPU, kept the dashboard test queued behind the others for a
// second and a half here).
func TestMain(m *testing.M) {
	testpar.PerCPU(2, 3)
	os.Exit(m.Run())
}
