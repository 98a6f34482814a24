package present_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/present"
	"github.com/hermesstate/hermesstate/models"
)

// FuzzPresent: on any input PrettyJSON, ToolCalls, Marks and
// ReadableSnippet never panic; PrettyJSON of valid JSON is the same JSON
// value; Marks loses no text.
func FuzzPresent(f *testing.F) {
	for _, s := range []string{`{"a":"\u68c0","b":[1,2.50,{"c":null}]}`, `[{"id":"x","function":{"name":"t","arguments":"{\"q\":1}"}}]`,
		"a >>>b<<< c", ">>>", "<<<>>>", `[{"name":1}]`, "\x00\xff", `"\ud800"`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := present.PrettyJSON(s)
		if json.Valid([]byte(strings.TrimSpace(s))) {
			var a, b any
			if json.Unmarshal([]byte(s), &a) == nil && json.Unmarshal([]byte(p), &b) == nil && !reflect.DeepEqual(a, b) {
				t.Fatalf("PrettyJSON changed the value: %q -> %q", s, p)
			}
			if !json.Valid([]byte(p)) {
				t.Fatalf("PrettyJSON of valid JSON is not JSON: %q -> %q", s, p)
			}
		} else if p != s {
			t.Fatalf("PrettyJSON changed text that is not JSON: %q -> %q", s, p)
		}
		_ = present.ToolCalls(models.JSON(s))
		_ = present.ReadableSnippet(s)
		var joined strings.Builder
		for _, sp := range present.Marks(s) {
			joined.WriteString(sp.Text)
		}
		// Only marks go: the text without marks is the same.
		bare := strings.NewReplacer(present.HitOpen, "", present.HitClose, "")
		want := bare.Replace(s)
		got := bare.Replace(joined.String())
		if got != want {
			t.Fatalf("Marks lost text: %q -> %q", s, joined.String())
		}
	})
}
