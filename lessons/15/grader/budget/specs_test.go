package budget

import (
	"strings"
	"testing"

	"quoteflowlab.dev/kit/msg"
)

// Every property has its words in both languages (spec.NAME), and the
// catalog has no words for a property that does not exist: lab check
// shows a demand for every property, in the language lab speaks.
func TestEveryPropertyIsWordedInBothLanguages(t *testing.T) {
	names := map[string]bool{}
	for _, s := range specs {
		names[s.name] = true
		for _, l := range []msg.Lang{msg.English, msg.Chinese} {
			if !msg.Has(l, "spec."+s.name) {
				t.Errorf("property %s has no %s words: add spec.%s to kit/msg/catalog", s.name, l, s.name)
			}
		}
		if msg.Has(msg.English, "spec_fail."+s.name) != msg.Has(msg.Chinese, "spec_fail."+s.name) {
			t.Errorf("property %s: spec_fail.%s is in one language only", s.name, s.name)
		}
	}
	ids, err := msg.IDs(msg.English)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		for _, prefix := range []string{"spec.", "spec_fail."} {
			if name, ok := strings.CutPrefix(id, prefix); ok && !names[name] {
				t.Errorf("the catalog words %s, but no property is named %s (specs.go)", id, name)
			}
		}
	}
}
