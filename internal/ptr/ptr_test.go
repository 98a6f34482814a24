package ptr_test

import (
	"testing"

	"github.com/hermesstate/hermesstate/internal/ptr"
)

func TestDeref(t *testing.T) {
	s := "x"
	if got := ptr.Deref(&s); got != "x" {
		t.Fatalf("Deref(&%q) = %q", s, got)
	}
	if got := ptr.Deref[string](nil); got != "" {
		t.Fatalf("Deref(nil) = %q, want \"\"", got)
	}
	n := int64(7)
	if got := ptr.Deref(&n); got != 7 {
		t.Fatalf("Deref(&7) = %d", got)
	}
}
