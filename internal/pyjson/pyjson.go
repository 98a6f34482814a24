// Package pyjson writes JSON the way Python's json.dumps does by default
// (", " and ": " separators, non-ASCII escaped as \uXXXX), so the JSON
// columns hermesstate writes are byte-identical to Hermes' and the FTS
// index sees the same text. models' JSON columns and the repositories use
// it.
package pyjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonical re-encodes the JSON text raw in the form Python's json.dumps writes
// by default: ", " and ": " separators, object keys in their given order,
// every character outside printable ASCII escaped as \uXXXX (surrogate pairs
// above U+FFFF), numbers kept as written. Lone surrogate escapes and invalid
// UTF-8 inside strings become U+FFFD. It returns an error when raw is not a
// single valid JSON value.
func Canonical(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(raw) + len(raw)/8)
	if err := pyValue(dec, &out); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("pyjson: trailing data after JSON value")
	}
	return out.Bytes(), nil
}

func pyValue(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("pyjson: %w", err)
	}
	return pyToken(dec, tok, out)
}

func pyToken(dec *json.Decoder, tok json.Token, out *bytes.Buffer) error {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			out.WriteByte('[')
			first := true
			for dec.More() {
				if !first {
					out.WriteString(", ")
				}
				first = false
				if err := pyValue(dec, out); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("pyjson: %w", err)
			}
			out.WriteByte(']')
		case '{':
			out.WriteByte('{')
			first := true
			for dec.More() {
				if !first {
					out.WriteString(", ")
				}
				first = false
				k, err := dec.Token()
				if err != nil {
					return fmt.Errorf("pyjson: %w", err)
				}
				ks, ok := k.(string)
				if !ok {
					return errors.New("pyjson: object key is not a string")
				}
				pyString(ks, out)
				out.WriteString(": ")
				if err := pyValue(dec, out); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("pyjson: %w", err)
			}
			out.WriteByte('}')
		default:
			return fmt.Errorf("pyjson: unexpected %v", t)
		}
	case string:
		pyString(t, out)
	case json.Number:
		out.WriteString(t.String())
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	default:
		return fmt.Errorf("pyjson: unexpected token %T", tok)
	}
	return nil
}

const hexDigits = "0123456789abcdef"

func writeU(out *bytes.Buffer, r rune) {
	out.WriteString(`\u`)
	out.WriteByte(hexDigits[(r>>12)&0xf])
	out.WriteByte(hexDigits[(r>>8)&0xf])
	out.WriteByte(hexDigits[(r>>4)&0xf])
	out.WriteByte(hexDigits[r&0xf])
}

// pyString writes s as Python's json.dumps(ensure_ascii=True) would.
func pyString(s string, out *bytes.Buffer) {
	out.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				out.WriteString(`\"`)
			case '\\':
				out.WriteString(`\\`)
			case '\n':
				out.WriteString(`\n`)
			case '\r':
				out.WriteString(`\r`)
			case '\t':
				out.WriteString(`\t`)
			case '\b':
				out.WriteString(`\b`)
			case '\f':
				out.WriteString(`\f`)
			default:
				if c < 0x20 || c == 0x7f {
					writeU(out, rune(c))
				} else {
					out.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			writeU(out, r1)
			writeU(out, r2)
			continue
		}
		writeU(out, r) // includes U+FFFD for invalid bytes
	}
	out.WriteByte('"')
}

// Dumps marshals v with encoding/json and re-encodes it in Python's form.
func Dumps(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonical(b)
}

// Falsy reports whether the JSON text is a value Python treats as false
// (null, false, 0, "", [], {}), which Hermes stores as NULL.
func Falsy(raw []byte) bool {
	s := strings.TrimSpace(string(raw))
	switch s {
	case "", "null", "false", "0", `""`, "[]", "{}", "0.0":
		return true
	}
	if len(s) >= 2 && (s[0] == '[' || s[0] == '{') {
		inner := strings.TrimSpace(s[1 : len(s)-1])
		return inner == ""
	}
	return false
}
