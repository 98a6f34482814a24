package models

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hermesstate/hermesstate/internal/pyjson"
)

// JSONSetKey returns the object text obj with key set to value, in Python's
// json.dumps form: existing keys keep their order, a new key is appended at
// the end, an existing key keeps its position. obj that is empty, invalid or
// not an object is treated as {}. It returns an error only when value cannot
// be marshalled.
func JSONSetKey(obj []byte, key string, value any) (JSONText, error) {
	vb, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("json set %s: %w", key, err)
	}
	type kv struct {
		k string
		v json.RawMessage
	}
	var pairs []kv
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	ok := false
	if t, err := dec.Token(); err == nil {
		if d, isDelim := t.(json.Delim); isDelim && d == '{' {
			ok = true
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					ok = false
					break
				}
				ks, _ := kt.(string)
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					ok = false
					break
				}
				pairs = append(pairs, kv{ks, raw})
			}
		}
	}
	if !ok {
		pairs = nil
	}
	replaced := false
	for i := range pairs {
		if pairs[i].k == key {
			pairs[i].v = vb
			replaced = true
		}
	}
	if !replaced {
		pairs = append(pairs, kv{key, vb})
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(p.k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(p.v)
	}
	buf.WriteByte('}')
	out, err := pyjson.Canonical(buf.Bytes())
	if err != nil {
		return nil, err
	}
	return JSONText(out), nil
}

// JSONGetString returns obj[key] when obj is a JSON object whose key holds a
// string.
func JSONGetString(obj []byte, key string) (string, bool) {
	var m map[string]any
	if len(obj) == 0 || json.Unmarshal(obj, &m) != nil {
		return "", false
	}
	s, ok := m[key].(string)
	return s, ok
}

// Text returns a pointer to s (for nullable text columns).
func Text(s string) *string { return &s }

// TextOrNil returns nil for "" and a pointer to s otherwise.
func TextOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
