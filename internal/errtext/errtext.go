// Package errtext says hermesstate's errors in a user's terms, for the CLI
// and the MCP server: the message of every *errs.Error without the
// library's operation name ("lineage.resolve_id: not found: ..." becomes
// `no session id starts with "x"`).
package errtext

import (
	"errors"
	"strings"

	"github.com/hermesstate/hermesstate/internal/errs"
)

// Message is err's text with every *errs.Error in it said for people:
// its own message, else its kind and cause; never the operation name.
// Errors of other types keep their text.
func Message(err error) string {
	if err == nil {
		return ""
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	own := e.Msg
	if own == "" {
		if e.Kind != nil {
			own = e.Kind.Error()
		}
		if e.Err != nil {
			if own != "" {
				own += ": "
			}
			own += Message(e.Err)
		}
	}
	full := err.Error()
	if inner := e.Error(); strings.Contains(full, inner) {
		return strings.Replace(full, inner, own, 1)
	}
	return full
}

// FirstLine is Message cut at its first line break.
func FirstLine(err error) string {
	s := Message(err)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
