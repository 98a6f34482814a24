package repo

import (
	"context"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// Meta is the repository of state_meta, the file's key/value store (Hermes
// keeps markers such as last_auto_prune, last_vacuum, db_file_generation,
// fts_* there). Values are text; the typed helpers parse and format them
// the way Hermes does (floats as Python's str(float)).
type Meta interface {
	// Get returns the value of key and whether the key exists (a NULL value
	// is returned as "" with true).
	Get(ctx context.Context, key string) (string, bool, error)
	// Float returns key parsed as a float; false when the key is missing or
	// empty. ErrInvalid when the stored text is not a number.
	Float(ctx context.Context, key string) (float64, bool, error)
	// Int returns key parsed as an integer; false when the key is missing or
	// empty. ErrInvalid when the stored text is not an integer.
	Int(ctx context.Context, key string) (int64, bool, error)
	// Set stores value under key (insert or replace).
	Set(ctx context.Context, key, value string) error
	// SetFloat stores f as Python's str(float) would write it ("1.0", "0.25").
	SetFloat(ctx context.Context, key string, f float64) error
	// SetInt stores n in decimal.
	SetInt(ctx context.Context, key string, n int64) error
	// Delete removes key and reports whether it existed.
	Delete(ctx context.Context, key string) (bool, error)
	// All returns every key and value (NULL as "").
	All(ctx context.Context) (map[string]string, error)
	// ListPrefix returns the keys starting with prefix (a literal: LIKE
	// wildcards are escaped; ASCII case-insensitive as SQLite's LIKE) and
	// their values, ordered by key (Hermes' list_meta_prefix, e.g.
	// "loop:<session_id>" rows). An empty prefix lists nothing.
	ListPrefix(ctx context.Context, prefix string) ([]MetaEntry, error)
}

// MetaEntry is one state_meta row.
type MetaEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type metaRepo struct{ db *DB }

// NewMeta returns the GORM implementation of Meta.
func NewMeta(db *DB) Meta { return &metaRepo{db} }

func checkKey(op, key string) error {
	if key == "" {
		return errs.Errorf(errs.ErrInvalid, op, "key is empty")
	}
	if len(key) > 1024 {
		return errs.Errorf(errs.ErrInvalid, op, "key is longer than 1024 bytes")
	}
	return checkText(op, "key", key)
}

func getMeta(tx *gorm.DB, key string) (string, bool, error) {
	var rows []models.StateMeta
	if err := tx.Where("key = ?", key).Limit(1).Find(&rows).Error; err != nil {
		return "", false, err
	}
	if len(rows) == 0 {
		return "", false, nil
	}
	return ptr.Deref(rows[0].Value), true, nil
}

func setMeta(tx *gorm.DB, key, value string) error {
	return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "key"}}, DoUpdates: clause.AssignmentColumns([]string{"value"})}).
		Create(&models.StateMeta{Key: key, Value: &value}).Error
}

func (r *metaRepo) Get(ctx context.Context, key string) (string, bool, error) {
	const op = "meta.get"
	if err := checkKey(op, key); err != nil {
		return "", false, err
	}
	type res struct {
		v  string
		ok bool
	}
	out, err := Read(ctx, r.db, op, func(tx *gorm.DB) (res, error) {
		v, ok, err := getMeta(tx, key)
		return res{v, ok}, err
	})
	return out.v, out.ok, err
}

func (r *metaRepo) Float(ctx context.Context, key string) (float64, bool, error) {
	v, ok, err := r.Get(ctx, key)
	if err != nil || !ok || v == "" {
		return 0, false, err
	}
	f, perr := strconv.ParseFloat(v, 64)
	if perr != nil {
		return 0, false, errs.Wrap(errs.ErrInvalid, "meta.float", perr, "state_meta "+strconv.Quote(key)+" is not a number")
	}
	return f, true, nil
}

func (r *metaRepo) Int(ctx context.Context, key string) (int64, bool, error) {
	v, ok, err := r.Get(ctx, key)
	if err != nil || !ok || v == "" {
		return 0, false, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return 0, false, errs.Wrap(errs.ErrInvalid, "meta.int", perr, "state_meta "+strconv.Quote(key)+" is not an integer")
	}
	return n, true, nil
}

func (r *metaRepo) Set(ctx context.Context, key, value string) error {
	const op = "meta.set"
	if err := checkKey(op, key); err != nil {
		return err
	}
	if err := checkText(op, "value", value); err != nil {
		return err
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error { return setMeta(tx, key, value) })
}

// PyFloat formats f the way Python's repr(float) (and str) does: the
// shortest round-trip digits, positional with ".0" on integral values for
// 1e-4 <= |f| < 1e16, scientific ("1e-05", "1e+16") outside.
func PyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-4 && a < 1e16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsRune(s, '.') {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}

func (r *metaRepo) SetFloat(ctx context.Context, key string, f float64) error {
	return r.Set(ctx, key, PyFloat(f))
}

func (r *metaRepo) SetInt(ctx context.Context, key string, n int64) error {
	return r.Set(ctx, key, strconv.FormatInt(n, 10))
}

func (r *metaRepo) Delete(ctx context.Context, key string) (bool, error) {
	const op = "meta.delete"
	if err := checkKey(op, key); err != nil {
		return false, err
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Where("key = ?", key).Delete(&models.StateMeta{})
		n = res.RowsAffected
		return res.Error
	})
	return n > 0, err
}

func (r *metaRepo) All(ctx context.Context) (map[string]string, error) {
	return Read(ctx, r.db, "meta.all", func(tx *gorm.DB) (map[string]string, error) {
		var rows []models.StateMeta
		if err := tx.Order("key").Find(&rows).Error; err != nil {
			return nil, err
		}
		out := make(map[string]string, len(rows))
		for _, m := range rows {
			out[m.Key] = ptr.Deref(m.Value)
		}
		return out, nil
	})
}

func (r *metaRepo) ListPrefix(ctx context.Context, prefix string) ([]MetaEntry, error) {
	const op = "meta.list_prefix"
	if prefix == "" {
		return []MetaEntry{}, nil
	}
	if err := checkText(op, "prefix", prefix); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]MetaEntry, error) {
		var rows []models.StateMeta
		q := tx.Where("key "+r.db.likeCI()+" ? ESCAPE '\\'", EscapeLike(prefix)+"%")
		if strings.ContainsRune(prefix, 0) {
			// SQLite's LIKE stops reading its pattern at a NUL: compare
			// the head exactly instead.
			q = tx.Where("SUBSTR(key, 1, ?) = ?", utf8.RuneCountInString(prefix), prefix)
		}
		if err := q.Order("key").Find(&rows).Error; err != nil {
			return nil, err
		}
		out := make([]MetaEntry, 0, len(rows))
		for _, m := range rows {
			out = append(out, MetaEntry{Key: m.Key, Value: ptr.Deref(m.Value)})
		}
		return out, nil
	})
}
