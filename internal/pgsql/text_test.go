package pgsql

import (
	"strings"
	"testing"
)

func TestEscapeRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", "\x00json:[1]", Esc, Esc + "0", Esc + "e", "a\x00b" + Esc + "c\x00", "\x00\x00" + Esc + Esc} {
		e := EscapeText(s)
		if strings.IndexByte(e, 0) >= 0 {
			t.Fatalf("escaped %q still holds NUL: %q", s, e)
		}
		if got := UnescapeText(e); got != s {
			t.Fatalf("round trip of %q: %q", s, got)
		}
	}
	if EscapeText("plain") != "plain" {
		t.Fatal("plain text must be stored unchanged")
	}
}

func FuzzEscapeRoundTrip(f *testing.F) {
	for _, s := range []string{"", "\x00json:", Esc + "0", "x" + Esc + "e\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EscapeText(s)
		if strings.IndexByte(e, 0) >= 0 {
			t.Fatalf("NUL left in %q", e)
		}
		if UnescapeText(e) != s {
			t.Fatalf("round trip of %q failed", s)
		}
	})
}

func TestClassify(t *testing.T) {
	if CheckSchema("hs_1") != nil || CheckSchema("1x") == nil || CheckSchema("a-b") == nil || CheckSchema("pg_x") == nil || CheckSchema(strings.Repeat("a", 64)) == nil {
		t.Fatal("CheckSchema")
	}
	if !IsDSN("postgres://x") || !IsDSN("PostgreSQL://x") || IsDSN("/tmp/state.db") {
		t.Fatal("IsDSN")
	}
	if r := Redact("postgres://u:secret@h/db"); strings.Contains(r, "secret") {
		t.Fatal(r)
	}
}

// A password given as a query parameter is masked as one in the user
// part is (issue 20 §5: it was printed in clear).
func TestRedactQueryPassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u@h/db?password=s3cr3t&sslmode=disable",
		"postgresql://h/db?sslmode=disable&PASSWORD=s3cr3t",
		"postgres://u:s3cr3t@h/db?password=s3cr3t",
	} {
		r := Redact(dsn)
		if strings.Contains(r, "s3cr3t") {
			t.Errorf("Redact(%q) = %q: the password shows", dsn, r)
		}
		if !strings.Contains(r, "xxxxx") {
			t.Errorf("Redact(%q) = %q: no mask where the password was", dsn, r)
		}
	}
	if r := Redact("postgres://u@h/db?sslmode=disable"); r != "postgres://u@h/db?sslmode=disable" {
		t.Errorf("a DSN without a password changed: %q", r)
	}
}
