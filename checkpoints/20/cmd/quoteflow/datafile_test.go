package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"quoteflowlab.dev/checkpoints/20/queue"
)

// A data file cut to 10–50 % of its size (a full disk, a bad copy) is
// refused at start with one sentence saying what is wrong and what to do,
// instead of starting and dying on first use with a SIGBUS or a panic.
func TestADamagedDataFileIsRefusedAtStart(t *testing.T) {
	for _, percent := range []int{10, 25, 50} {
		t.Run(fmt.Sprintf("cut to %d%%", percent), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "quoteflow.db")
			fill(t, path)
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, info.Size()*int64(percent)/100); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"compensate", "--once", "--data", dir}, &stdout, &stderr)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if code != 1 || len(lines) != 1 {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and one line", code, stderr.String())
			}
			for _, want := range []string{path + " is damaged", "move it aside or restore it"} {
				if !strings.Contains(lines[0], want) {
					t.Errorf("stderr %q does not say %q", lines[0], want)
				}
			}
		})
	}
}

// fill writes a data file of a few MB as the service would: 4,000 jobs.
func fill(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := queue.NewBolt(db, queue.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for b := range 40 {
		jobs := make([]queue.Job, 100)
		for i := range jobs {
			jobs[i] = queue.Job{ID: fmt.Sprintf("b%02d/%d/boreal", b, i), Body: bytes.Repeat([]byte("x"), 400),
				NotBefore: time.Now().Add(time.Hour)}
		}
		if err := q.Enqueue(context.Background(), jobs...); err != nil {
			t.Fatal(err)
		}
	}
}
