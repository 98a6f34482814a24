// Package termtext makes stored text safe to show on a terminal. Stored
// content is hostile (messages come from the web and from tools): an
// escape sequence in a message could recolour the screen, set the window
// title (ESC ] 0 ; title BEL), move the cursor or worse, and a bidi control
// (U+202E RIGHT-TO-LEFT OVERRIDE) could make a title read backwards. Every
// terminal surface of hermes-state (the CLI's text output, browse) shows
// text through Clean or Writer; JSON and JSONL output keep the bytes.
//
// Each control character is replaced by U+FFFD, one for one, so what was
// there stays visible and nothing is silently dropped (a stripper such as
// charmbracelet/x/ansi's Strip removes whole sequences, which hides that
// the text held them, and does not know bidi controls).
package termtext

import (
	"io"
	"unicode/utf8"
)

// Replacement is what each neutralised character becomes.
const Replacement = '\uFFFD'

// Neutralised reports whether r is replaced on a terminal: C0 controls
// other than newline and tab (ESC, BEL, NUL, backspace, ...), DEL, C1
// controls (U+0080-U+009F, CSI among them), and the bidi embedding,
// override and isolate controls U+202A-U+202E and U+2066-U+2069. A
// carriage return is dropped instead (see Clean).
func Neutralised(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Clean returns s safe to print: every neutralised character (see
// Neutralised) and every byte that is not valid UTF-8 becomes U+FFFD;
// carriage returns are dropped (CRLF line ends stay line ends, and a lone
// CR cannot overwrite a line); newlines and tabs are kept.
func Clean(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || r == '\r' || Neutralised(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			b = utf8.AppendRune(b, Replacement)
		case r == '\r':
		case Neutralised(r):
			b = utf8.AppendRune(b, Replacement)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

// Writer passes everything written to it through Clean on its way to the
// underlying writer. A UTF-8 sequence split across two writes is kept
// until it is whole; Flush writes what is left of an unfinished one (as
// U+FFFD).
type Writer struct {
	w     io.Writer
	carry []byte
}

// NewWriter returns a Writer onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write cleans p and writes it; it reports len(p) on success, and the
// underlying writer's error otherwise.
func (t *Writer) Write(p []byte) (int, error) {
	buf := p
	if len(t.carry) > 0 {
		buf = append(t.carry, p...)
		t.carry = nil
	}
	// Keep an incomplete rune at the end for the next write.
	cut := len(buf)
	for k := 1; k <= utf8.UTFMax-1 && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	if cut < len(buf) {
		t.carry = append([]byte(nil), buf[cut:]...)
	}
	if _, err := io.WriteString(t.w, Clean(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is left of an unfinished UTF-8 sequence (as U+FFFD).
func (t *Writer) Flush() error {
	if len(t.carry) == 0 {
		return nil
	}
	s := Clean(string(t.carry))
	t.carry = nil
	_, err := io.WriteString(t.w, s)
	return err
}
