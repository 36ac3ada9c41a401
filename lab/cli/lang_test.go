package cli

import (
	"testing"

	"quoteflowlab.dev/kit/msg"
)

// Every command's summary in lab help is a message of the catalog, in both
// languages: a summary written as text would print as it is, untranslated.
func TestEveryCommandSummaryIsAMessage(t *testing.T) {
	for name, c := range commands {
		for _, l := range msg.Langs {
			if !msg.Has(l, c.summary) {
				t.Errorf("lab %s: summary %q is no message of catalog/%s.toml", name, c.summary, l)
			}
		}
	}
}
