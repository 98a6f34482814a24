package repo

import (
	"context"
	"encoding/json"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// Routing is the repository of gateway_routing: one JSON entry per
// (scope, session_key) telling the gateway which session a peer's messages
// go to. The default scope is "".
type Routing interface {
	// Upsert stores entry (a JSON object, written in Python's json.dumps
	// form) for (scope, key) and stamps updated_at. ErrInvalid when entry is
	// not a JSON object or the key is empty.
	Upsert(ctx context.Context, scope, key string, entry models.JSON) error
	// Get returns the entry of (scope, key), or ErrNotFound.
	Get(ctx context.Context, scope, key string) (*models.GatewayRouting, error)
	// List returns the entries of one scope ordered by session_key.
	List(ctx context.Context, scope string) ([]models.GatewayRouting, error)
	// Entries returns the entries of one scope as session_key → stored
	// entry_json text (Hermes' load_gateway_routing_entries).
	Entries(ctx context.Context, scope string) (map[string]string, error)
	// Delete removes (scope, key) and reports whether it existed.
	Delete(ctx context.Context, scope, key string) (bool, error)
}

type routingRepo struct{ db *DB }

// NewRouting returns the GORM implementation of Routing.
func NewRouting(db *DB) Routing { return &routingRepo{db} }

func checkRoutingKey(op, scope, key string) error {
	if key == "" {
		return errs.Errorf(errs.ErrInvalid, op, "session_key is empty")
	}
	if err := checkText(op, "session_key", key); err != nil {
		return err
	}
	return checkText(op, "scope", scope)
}

func (r *routingRepo) Upsert(ctx context.Context, scope, key string, entry models.JSON) error {
	const op = "routing.upsert"
	if err := checkRoutingKey(op, scope, key); err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if len(entry) == 0 || json.Unmarshal(entry, &obj) != nil || obj == nil {
		return errs.Errorf(errs.ErrInvalid, op, "entry must be a JSON object")
	}
	if len(entry) > MaxContentBytes {
		return errs.Errorf(errs.ErrInvalid, op, "entry is %d bytes; the limit is %d", len(entry), MaxContentBytes)
	}
	row := models.GatewayRouting{Scope: scope, SessionKey: key, EntryJSON: entry, UpdatedAt: models.Now()}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "scope"}, {Name: "session_key"}},
			DoUpdates: clause.AssignmentColumns([]string{"entry_json", "updated_at"}),
		}).Create(&row).Error
	})
}

func (r *routingRepo) Get(ctx context.Context, scope, key string) (*models.GatewayRouting, error) {
	const op = "routing.get"
	if err := checkRoutingKey(op, scope, key); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*models.GatewayRouting, error) {
		var rows []models.GatewayRouting
		if err := tx.Where("scope = ? AND session_key = ?", scope, key).Limit(1).Find(&rows).Error; err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return nil, errs.Errorf(errs.ErrNotFound, op, "no routing entry for %q in scope %q", key, scope)
		}
		return &rows[0], nil
	})
}

func (r *routingRepo) List(ctx context.Context, scope string) ([]models.GatewayRouting, error) {
	const op = "routing.list"
	if err := checkText(op, "scope", scope); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]models.GatewayRouting, error) {
		out := []models.GatewayRouting{}
		return out, tx.Where("scope = ?", scope).Order("session_key").Find(&out).Error
	})
}

func (r *routingRepo) Entries(ctx context.Context, scope string) (map[string]string, error) {
	const op = "routing.entries"
	if err := checkText(op, "scope", scope); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (map[string]string, error) {
		var rows []struct {
			SessionKey string
			EntryJSON  string
		}
		if err := tx.Model(&models.GatewayRouting{}).Select("session_key, entry_json").Where("scope = ?", scope).Find(&rows).Error; err != nil {
			return nil, err
		}
		out := make(map[string]string, len(rows))
		for _, x := range rows {
			out[x.SessionKey] = x.EntryJSON
		}
		return out, nil
	})
}

func (r *routingRepo) Delete(ctx context.Context, scope, key string) (bool, error) {
	const op = "routing.delete"
	if err := checkRoutingKey(op, scope, key); err != nil {
		return false, err
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Where("scope = ? AND session_key = ?", scope, key).Delete(&models.GatewayRouting{})
		n = res.RowsAffected
		return res.Error
	})
	return n > 0, err
}
