package hermesstate_test

import (
	"bytes"
	"context"
	"errors"
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
		_, err := st.Portability().Import(context.Background(), bytes.NewReader(in), nil)
		if err != nil && !errors.Is(err, hs.ErrInvalid) && !errors.Is(err, hs.ErrConflict) && !errors.Is(err, hs.ErrNotFound) {
			t.Fatalf("unexpected error kind for %q: %v", in, err)
		}
	})
}
