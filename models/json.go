package models

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"gorm.io/gorm/schema"
)

// JSON is a JSON column whose value is decoded when it is marshalled (for
// example messages.tool_calls, which Hermes' get_messages returns parsed).
// It holds the JSON text itself; the zero value (nil) is SQL NULL.
type JSON []byte

// JSONText is a JSON column that Hermes returns as its stored text (for
// example sessions.model_config, messages.reasoning_details): marshalling
// yields a JSON string holding the text. It may also hold text that is not
// JSON at all: Hermes stores a string value of reasoning_details as given.
type JSONText []byte

// JSONOf marshals v into a JSON value. It returns an errs.ErrInvalid error when v
// cannot be marshalled.
func JSONOf(v any) (JSON, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errs.Wrap(errs.ErrInvalid, "json", err, "value cannot be encoded as JSON")
	}
	return JSON(b), nil
}

// MustJSON is JSONOf for literals in tests and examples; it panics on error.
func MustJSON(v any) JSON {
	j, err := JSONOf(v)
	if err != nil {
		panic(err)
	}
	return j
}

// IsNull reports whether j is empty (stored as NULL).
func (j JSON) IsNull() bool { return len(j) == 0 || pyjson.Falsy(j) }

// Decode unmarshals j into v; a NULL value leaves v untouched and returns nil.
func (j JSON) Decode(v any) error {
	if len(j) == 0 {
		return nil
	}
	return json.Unmarshal(j, v)
}

// MarshalJSON writes the value itself (null when empty).
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	if !json.Valid(j) {
		return json.Marshal(string(j))
	}
	return []byte(j), nil
}

// UnmarshalJSON keeps the raw value; JSON null becomes nil.
func (j *JSON) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*j = nil
		return nil
	}
	*j = append((*j)[:0], b...)
	return nil
}

// String returns the JSON text.
func (j JSON) String() string { return string(j) }

// IsNull reports whether t is empty (stored as NULL).
func (t JSONText) IsNull() bool {
	return len(t) == 0 || (json.Valid(t) && pyjson.Falsy(t))
}

// Decode unmarshals the text into v; NULL leaves v untouched.
func (t JSONText) Decode(v any) error {
	if len(t) == 0 {
		return nil
	}
	return json.Unmarshal(t, v)
}

// Value returns the parsed value when the text is JSON, else the text as a
// string; nil for NULL.
func (t JSONText) Value() any {
	if len(t) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(t, &v); err != nil {
		return string(t)
	}
	return v
}

// MarshalJSON writes the stored text as a JSON string (null when empty).
func (t JSONText) MarshalJSON() ([]byte, error) {
	if len(t) == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(string(t))
}

// UnmarshalJSON accepts a JSON string (the text) or any other JSON value
// (kept as its text); null becomes nil.
func (t *JSONText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*t = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = JSONText(s)
		return nil
	}
	*t = append((*t)[:0], b...)
	return nil
}

// String returns the text.
func (t JSONText) String() string { return string(t) }

// pyJSONSerializer is the GORM serializer registered as "pyjson". It writes
// JSON columns as Python's json.dumps would (so Hermes reads them
// identically and FTS indexes the same text), writes empty values as NULL,
// and reads tolerantly: stored text that is not JSON is kept as it is.
type pyJSONSerializer struct{}

// serializerName is the tag value for pyJSONSerializer: `gorm:"serializer:pyjson"`.
const serializerName = "pyjson"

func init() { schema.RegisterSerializer(serializerName, pyJSONSerializer{}) }

// Scan implements schema.SerializerInterface.
func (pyJSONSerializer) Scan(ctx context.Context, field *schema.Field, dst reflect.Value, dbValue any) error {
	var raw []byte
	switch v := dbValue.(type) {
	case nil:
	case []byte:
		raw = append([]byte(nil), v...)
	case string:
		raw = []byte(v)
	default:
		return fmt.Errorf("pyjson: cannot scan %T into %s", dbValue, field.Name)
	}
	fv := reflect.New(field.FieldType)
	switch p := fv.Interface().(type) {
	case *JSON:
		if raw != nil {
			if json.Valid(raw) {
				*p = JSON(raw)
			} else {
				b, _ := json.Marshal(string(raw))
				*p = JSON(b)
			}
		}
	case *JSONText:
		if raw != nil {
			*p = JSONText(raw)
		}
	default:
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, fv.Interface()); err != nil {
				return fmt.Errorf("pyjson: column %s: %w", field.DBName, err)
			}
		}
	}
	field.ReflectValueOf(ctx, dst).Set(fv.Elem())
	return nil
}

// SQLValue returns what the pyjson serializer stores for j in column: nil
// (NULL) for an empty or falsy value, else the JSON text in Python's
// json.dumps form. ErrInvalid when j is not valid JSON.
func (j JSON) SQLValue(column string) (any, error) {
	if j.IsNull() {
		return nil, nil
	}
	b, err := pyjson.Canonical(j)
	if err != nil {
		return nil, errs.Wrap(errs.ErrInvalid, "json", err, "column "+column+" does not hold valid JSON")
	}
	return string(b), nil
}

// SQLValue returns what the pyjson serializer stores for t in column: nil
// for NULL, text that is not JSON as it is, JSON text in Python's
// json.dumps form.
func (t JSONText) SQLValue(column string) (any, error) {
	if t.IsNull() {
		return nil, nil
	}
	if !json.Valid(t) {
		return string(t), nil
	}
	b, err := pyjson.Canonical(t)
	if err != nil {
		return nil, errs.Wrap(errs.ErrInvalid, "json", err, "column "+column+" does not hold valid JSON")
	}
	return string(b), nil
}

// Value implements schema.SerializerInterface.
func (pyJSONSerializer) Value(ctx context.Context, field *schema.Field, dst reflect.Value, fieldValue any) (any, error) {
	switch v := fieldValue.(type) {
	case JSON:
		return v.SQLValue(field.DBName)
	case JSONText:
		return v.SQLValue(field.DBName)
	case nil:
		return nil, nil
	}
	b, err := pyjson.Dumps(fieldValue)
	if err != nil {
		return nil, errs.Wrap(errs.ErrInvalid, "json", err, "column "+field.DBName+" cannot be encoded")
	}
	if pyjson.Falsy(b) {
		return nil, nil
	}
	return string(b), nil
}
