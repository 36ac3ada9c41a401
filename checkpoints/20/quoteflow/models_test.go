package quoteflow

import (
	"encoding/json"
	"testing"
)

// elapsed_ms is a float on the wire even when it is whole: a Python client
// reading 800 would get an int.
func TestElapsedIsAlwaysWrittenAsAFloat(t *testing.T) {
	for ms, want := range map[Milliseconds]string{800: "800.0", 52.161: "52.161", 0: "0.0", 0.5: "0.5"} {
		b, err := json.Marshal(QuoteResult{ElapsedMS: ms})
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if string(got["elapsed_ms"]) != want {
			t.Errorf("elapsed_ms %v is written %s, want %s", float64(ms), got["elapsed_ms"], want)
		}
	}
}
