package pyjson

import (
	"os/exec"
	"testing"
)

func TestCanonicalUnicode(t *testing.T) {
	in := `{"profile":"wörk","e":"😀","c":"\u0001\u007f","q":"a\"b\\u00e9"}`
	got, err := CanonicalUnicode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"profile\": \"wörk\", \"e\": \"😀\", \"c\": \"\\u0001\x7f\", \"q\": \"a\\\"b\\\\u00e9\"}"
	if py, err := exec.LookPath("python3"); err == nil {
		out, err := exec.Command(py, "-c", `import json,sys; sys.stdout.write(json.dumps(json.loads(sys.argv[1]), ensure_ascii=False))`, in).Output()
		if err != nil {
			t.Fatal(err)
		}
		want = string(out)
	}
	if string(got) != want {
		t.Fatalf("got %q want %q", got, want)
	}
}
