package pyjson

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPyJSONMatchesPython(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":[1,2,{"c":null}],"d":"é"}`: `{"a": 1, "b": [1, 2, {"c": null}], "d": "\u00e9"}`,
		`[]`:                                   `[]`,
		`{}`:                                   `{}`,
		`"检查配置"`:                               `"\u68c0\u67e5\u914d\u7f6e"`,
		`"😀"`:                                  `"\ud83d\ude00"`,
		`"a\u0000b\n\t\"\\/"`:                  `"a\u0000b\n\t\"\\/"`,
		"\"\u007f\"":                           `"\u007f"`,
		`{"z": 1, "a": 2}`:                     `{"z": 1, "a": 2}`,
		`[1.5e3, -0, 10000000000000000000000, true]`: `[1.5e3, -0, 10000000000000000000000, true]`,
		`"\ud800"`: `"\ufffd"`,
		` { "nested" : { "deep" : [ [ ] , { } ] } } `: `{"nested": {"deep": [[], {}]}}`,
	} {
		got, err := Canonical([]byte(in))
		require.NoError(t, err, in)
		require.Equal(t, want, string(got), in)
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `[1,]`, `1 2`, `nul`} {
		_, err := Canonical([]byte(bad))
		require.Error(t, err, bad)
	}
}

func FuzzPyJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, "é", null]}`, `"\ud83d\ude00"`, `[]`, `{"":{"":""}}`, `1e400`, `"\u0000"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			if _, err := Canonical([]byte(in)); err == nil {
				t.Fatalf("PyJSON accepted invalid JSON %q", in)
			}
			return
		}
		out, err := Canonical([]byte(in))
		if err != nil {
			t.Fatalf("Canonical(%q): %v", in, err)
		}
		if !json.Valid(out) {
			t.Fatalf("Canonical(%q) = %q is not JSON", in, out)
		}
		for _, c := range out {
			if c >= 0x80 {
				t.Fatalf("Canonical(%q) = %q has non-ASCII bytes", in, out)
			}
		}
		var a, b any
		_ = json.Unmarshal([]byte(in), &a)
		_ = json.Unmarshal(out, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("PyJSON changed the value: %q -> %q", in, out)
		}
		again, err := Canonical(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("PyJSON is not idempotent on %q: %q", out, again)
		}
	})
}
