package migrations

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// GenerationKey is the state_meta key of the file's generation stamp.
const GenerationKey = "db_file_generation"

// ApplicationID returns the PRAGMA application_id Hermes derives from a
// generation token: its first 8 hex digits as a number, masked to 31 bits,
// 1 when that is 0 (hermes_state.py, _ensure_db_file_generation). It
// returns 0 for a token that does not start with 8 hex digits.
func ApplicationID(token string) int64 {
	if len(token) < 8 {
		return 0
	}
	n, err := strconv.ParseUint(token[:8], 16, 32)
	if err != nil {
		return 0
	}
	if id := int64(n & 0x7fffffff); id != 0 {
		return id
	}
	return 1
}

// StampHermesFile writes, at a writable open of a SQLite file, what Hermes
// v30 writes at its own writable open and relies on afterwards:
//   - state_meta.db_file_generation, a random 32-hex token minted once per
//     file (first opener wins: INSERT OR IGNORE);
//   - PRAGMA application_id from that token, only while it is 0 (Hermes
//     re-reads it before every write to notice a replaced file; a non-zero
//     value is never changed);
//   - state_meta.fts_storage_version = 3 when the file has Hermes' current
//     FTS layout and no rebuild is pending (fts_rebuild_high_water).
//
// It reads first and writes only what is missing, in one BEGIN IMMEDIATE
// transaction retried on lock errors for up to 20 s. It returns an error
// wrapping errs.ErrBusy when the lock could not be had, or the failing
// statement's error.
func StampHermesFile(ctx context.Context, db *gorm.DB) error {
	if isPostgres(db) {
		return nil
	}
	db = db.WithContext(ctx)
	need, err := hermesStampsMissing(db)
	if err != nil || !need {
		return err
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	token := hex.EncodeToString(b)
	res, err := sqlitex.Retry(ctx, 20*time.Second, func() error {
		return db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("INSERT OR IGNORE INTO state_meta (key, value) VALUES (?, ?)", GenerationKey, token).Error; err != nil {
				return err
			}
			var got []string
			if err := tx.Raw("SELECT value FROM state_meta WHERE key = ?", GenerationKey).Scan(&got).Error; err != nil {
				return err
			}
			var app int64
			if err := tx.Raw("PRAGMA application_id").Scan(&app).Error; err != nil {
				return err
			}
			if app == 0 && len(got) == 1 {
				if id := ApplicationID(got[0]); id != 0 {
					if err := tx.Exec(fmt.Sprintf("PRAGMA application_id=%d", id)).Error; err != nil {
						return err
					}
				}
			}
			stamp, err := ftsStampDue(tx)
			if err != nil || !stamp {
				return err
			}
			return tx.Exec("INSERT OR IGNORE INTO state_meta (key, value) VALUES ('fts_storage_version', '3')").Error
		})
	})
	if err != nil && sqlitex.IsLock(err) {
		return errs.Wrap(errs.ErrBusy, "open", err, fmt.Sprintf("another process held the write lock for %s", res.Waited.Round(time.Millisecond)))
	}
	return err
}

// hermesStampsMissing reports whether StampHermesFile has anything to
// write.
func hermesStampsMissing(db *gorm.DB) (bool, error) {
	if !hasTable(db, "state_meta") {
		return false, nil
	}
	var n int64
	if err := db.Raw("SELECT count(*) FROM state_meta WHERE key = ? AND value IS NOT NULL AND value <> ''", GenerationKey).Scan(&n).Error; err != nil {
		return false, err
	}
	var app int64
	if err := db.Raw("PRAGMA application_id").Scan(&app).Error; err != nil {
		return false, err
	}
	if n == 0 || app == 0 {
		return true, nil
	}
	return ftsStampDue(db)
}

// ftsStampDue reports whether fts_storage_version = 3 is missing from a
// file with Hermes' current FTS layout and no rebuild pending.
func ftsStampDue(db *gorm.DB) (bool, error) {
	layout, err := ftsql.DetectLayout(db)
	if err != nil || layout != ftsql.LayoutCurrent {
		return false, err
	}
	var n int64
	err = db.Raw("SELECT count(*) FROM state_meta WHERE key IN ('fts_storage_version', ?)", ftsql.MetaHighWater).Scan(&n).Error
	return n == 0, err
}

// TrigramWithoutNUL makes the trigram index of a SQLite file fed text
// without U+0000, at a writable open (ftsql.TrigramWithoutNUL: SQLite
// before 3.45 and after tokenize U+0000 differently, and Hermes' 3.40.1
// shares the file). It checks first and writes only when the trigram view
// or triggers still feed U+0000, in one BEGIN IMMEDIATE transaction retried
// on lock errors for up to 20 s. It returns an error wrapping errs.ErrBusy
// when the lock could not be had, or the failing statement's error.
func TrigramWithoutNUL(ctx context.Context, db *gorm.DB) error {
	if isPostgres(db) {
		return nil
	}
	db = db.WithContext(ctx)
	need, err := ftsql.TrigramFeedsNUL(db)
	if err != nil || !need {
		return err
	}
	res, err := sqlitex.Retry(ctx, 20*time.Second, func() error {
		return db.Transaction(func(tx *gorm.DB) error {
			_, err := ftsql.TrigramWithoutNUL(tx)
			return err
		})
	})
	if err != nil && sqlitex.IsLock(err) {
		return errs.Wrap(errs.ErrBusy, "open", err, fmt.Sprintf("another process held the write lock for %s", res.Waited.Round(time.Millisecond)))
	}
	return err
}
