package querytext

import (
	"strings"
	"testing"
)

func TestPythonClasses(t *testing.T) {
	// Python's str.isspace counts the information separators; Go's does not.
	if !IsSpace('\x1c') || !IsSpace('\u3000') || IsSpace('a') {
		t.Error("IsSpace")
	}
	if !IsWord('_') || !IsWord('桂') || !IsWord('٣') || IsWord('-') {
		t.Error("IsWord")
	}
	if got := Strip("\x1f a b \t"); got != "a b" {
		t.Errorf("Strip = %q", got)
	}
	if got := strings.Join(Fields("a\x1db  c"), "|"); got != "a|b|c" {
		t.Errorf("Fields = %q", got)
	}
	if !IsOperator("and") || !IsOperator("Not") || IsOperator("NEAR") || IsOperator("ORE") {
		t.Error("IsOperator")
	}
}
