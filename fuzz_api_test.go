package hermesstate_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/repo"
)

// FuzzSanitizeTitle: the result is either an ErrInvalid (too long) or a
// clean title: valid UTF-8, at most 100 characters, no control or
// zero-width characters, single spaces, trimmed, and sanitizing it again
// changes nothing.
func FuzzSanitizeTitle(f *testing.F) {
	for _, s := range []string{"", "  Rust \t borrow\u200b checker   notes ", "\x00\x07", "zero\u200bwidth\ufeff", strings.Repeat("a", 120), "桂林 #2", "a\x0bb", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := repo.SanitizeTitle(in)
		if err != nil {
			if !errors.Is(err, hs.ErrInvalid) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if !utf8.ValidString(out) || utf8.RuneCountInString(out) > repo.MaxTitleLength {
			t.Fatalf("bad result %q", out)
		}
		if out != strings.TrimSpace(out) || strings.Contains(out, "  ") {
			t.Fatalf("not collapsed/trimmed: %q", out)
		}
		for _, r := range out {
			if (unicode.IsSpace(r) && r != ' ') || r < 0x20 || r == 0x7f || (r >= 0x200b && r <= 0x200f) || r == 0xfeff {
				t.Fatalf("kept %U in %q", r, out)
			}
		}
		again, err := repo.SanitizeTitle(out)
		if err != nil || again != out {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
	})
}

// FuzzImport: arbitrary input never panics and is refused with ErrInvalid
// (or imported); the store stays consistent.
func FuzzImport(f *testing.F) {
	f.Add([]byte(`{"id": "a", "source": "cli", "started_at": 1767000000.5, "messages": [{"id": 1, "role": "user", "content": "hi", "timestamp": 1767000001}]}`))
	f.Add([]byte(`{"id": "b", "source": "cli", "parent_session_id": "zz", "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}` + "\n" + `{"id": "zz", "source": "cli"}`))
	f.Add([]byte(`{"id": "c", "source": "cli", "messages": null}`))
	f.Add([]byte(`[1, 2]`))
	f.Add([]byte(`{"id": 5}`))
	st := hermesstatetest.Fresh(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<16 {
			return
		}
		// A file (read twice, in id order) and a stream (in file order).
		for _, r := range []io.Reader{bytes.NewReader(in), struct{ io.Reader }{bytes.NewReader(in)}} {
			res, err := st.Portability().Import(context.Background(), r, nil)
			if err != nil && !errors.Is(err, hs.ErrInvalid) && !errors.Is(err, hs.ErrConflict) && !errors.Is(err, hs.ErrNotFound) {
				t.Fatalf("unexpected error kind for %q: %v", in, err)
			}
			if err != nil && !errors.Is(err, hs.ErrInvalid) {
				continue
			}
			// Every line with something on it is imported, skipped or
			// refused: none is lost without a word.
			lines := int64(0)
			for _, l := range bytes.Split(in, []byte("\n")) {
				if len(bytes.TrimSpace(l)) > 0 {
					lines++
				}
			}
			if got := res.Sessions + res.Skipped + int64(len(res.Refused)); got != lines {
				t.Fatalf("%d lines, %d imported + %d skipped + %d refused (%v) for %q", lines, res.Sessions, res.Skipped, len(res.Refused), err, in)
			}
			if (err != nil) != (len(res.Refused) > 0) {
				t.Fatalf("refused %v but error %v for %q", res.Refused, err, in)
			}
		}
	})
}
