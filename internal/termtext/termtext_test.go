package termtext

import (
	"bytes"
	"strings"
	"testing"
)

// payloads are stored texts that act on a terminal when printed raw.
var payloads = []string{
	"\x1b[31mred\x1b[0m", "\x1b]0;pwned title\x07", "\x1b]52;c;aGVsbG8=\x07", "bell\x07", "back\bspace",
	"\x9b31mC1 CSI", "NUL\x00", "DEL\x7f", "cr\roverwrite", "title \u202Eevil\u202C", "iso \u2066x\u2069", "bad \xff utf8",
}

func TestCleanNeutralisesPayloads(t *testing.T) {
	for _, p := range payloads {
		got := Clean(p)
		for _, r := range got {
			if r == '\r' || Neutralised(r) {
				t.Errorf("Clean(%q) = %q still holds %U", p, got, r)
			}
		}
		if strings.ContainsAny(got, "\x1b\x07\x00\x7f\u202e\u2066") {
			t.Errorf("Clean(%q) = %q", p, got)
		}
	}
	for in, want := range map[string]string{"a\nb\tc": "a\nb\tc", "crlf\r\nnext": "crlf\nnext", "\x1b[31m": "\uFFFD[31m",
		"桂林 🚀 émoji": "桂林 🚀 émoji", "\u202Eabc": "\uFFFDabc"} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWriterSplitRunes: a rune split across writes is kept whole.
func TestWriterSplitRunes(t *testing.T) {
	in := "桂林 \x1b]0;t\x07 ok \u202E!"
	var out bytes.Buffer
	w := NewWriter(&out)
	for i := 0; i < len(in); i++ {
		if _, err := w.Write([]byte{in[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if out.String() != Clean(in) {
		t.Fatalf("byte by byte: %q, want %q", out.String(), Clean(in))
	}
	out.Reset()
	w = NewWriter(&out)
	_, _ = w.Write([]byte("x\xe6\xa1"))
	_ = w.Flush()
	if out.String() != "x\uFFFD\uFFFD" {
		t.Fatalf("unfinished rune: %q", out.String())
	}
}

func FuzzClean(f *testing.F) {
	for _, p := range payloads {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Clean(s)
		for _, r := range got {
			if r == '\r' || Neutralised(r) {
				t.Fatalf("Clean(%q) = %q holds %U", s, got, r)
			}
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		for i := 0; i < len(s); i += 3 {
			_, _ = w.Write([]byte(s[i:min(i+3, len(s))]))
		}
		_ = w.Flush()
		for _, r := range out.String() {
			if r == '\r' || Neutralised(r) {
				t.Fatalf("Writer(%q) = %q holds %U", s, out.String(), r)
			}
		}
	})
}
