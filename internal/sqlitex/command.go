package sqlitex

import "strings"

// Command is the hermes-state command line that acts on the store at path
// ("" or a postgres:// URL is left out: the caller's own --db applies),
// quoted for a POSIX shell and wrapped in backquotes, for the advice of an
// error message: Command("/x/state.db", "doctor") is
// "`hermes-state --db /x/state.db doctor`". Messages name the exact command
// that helps with the file they are about, never one that acts on the
// default store.
func Command(path string, args ...string) string {
	parts := []string{"hermes-state"}
	if path != "" && !strings.HasPrefix(path, "postgres://") && !strings.HasPrefix(path, "postgresql://") {
		parts = append(parts, "--db", ShellQuote(path))
	}
	parts = append(parts, args...)
	return "`" + strings.Join(parts, " ") + "`"
}

// ShellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./+:,@%=.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./+:,@%=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
