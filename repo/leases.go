package repo

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// leaseTable names one of the two lease tables and its staleness rule.
type leaseTable struct {
	name, key string
	// strict: a row is stale when expires_at < now (compression locks);
	// otherwise when expires_at <= now (turn leases).
	strict bool
}

var (
	turnLeaseTable = leaseTable{name: "session_turn_leases", key: "conversation_id"}
	lockTable      = leaseTable{name: "compression_locks", key: "session_id", strict: true}
)

// turnLeaseSweepGrace: turn-lease rows expired longer than this are swept by
// the next acquisition of any conversation (_TURN_LEASE_SWEEP_GRACE_S).
const turnLeaseSweepGrace = 86400.0

type leaseRow struct {
	Key        string  `gorm:"column:k"`
	Holder     string  `gorm:"column:holder"`
	AcquiredAt float64 `gorm:"column:acquired_at"`
	ExpiresAt  float64 `gorm:"column:expires_at"`
}

func (t leaseTable) live(expires, now float64) bool {
	if t.strict {
		return expires >= now
	}
	return expires > now
}

func (t leaseTable) lease(r leaseRow, now float64) Lease {
	return Lease{Key: r.Key, Holder: r.Holder, AcquiredAt: models.Epoch(r.AcquiredAt), ExpiresAt: models.Epoch(r.ExpiresAt), Live: t.live(r.ExpiresAt, now)}
}

// nowOf returns t (time.Now() when zero) as epoch seconds.
func nowOf(t time.Time) float64 {
	if t.IsZero() {
		t = time.Now()
	}
	return models.EpochOf(t).Float()
}

// lockLeaseKey serialises the claims of one key on PostgreSQL (READ
// COMMITTED writers run concurrently there); SQLite's BEGIN IMMEDIATE already
// holds the file's write lock.
func lockLeaseKey(tx *gorm.DB, t leaseTable, key string) error {
	if !isPostgres(tx) {
		return nil
	}
	return tx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(current_schema() || ':' || ? || ':' || ?))",
		pgsql.LockClassSession, t.name, key).Error
}

func readLease(tx *gorm.DB, t leaseTable, key string) (leaseRow, bool, error) {
	var rows []leaseRow
	err := tx.Raw("SELECT "+t.key+" AS k, holder, acquired_at, expires_at FROM "+t.name+" WHERE "+t.key+" = ?", key).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return leaseRow{}, false, err
	}
	return rows[0], true, nil
}

// claimLease is Hermes' _claim_lease_row inside the caller's write
// transaction: a stale row is deleted (by its holder, so a row another
// claimer just wrote is never touched), the caller's row inserted unless
// one is there, and ownership read back.
func claimLease(tx *gorm.DB, t leaseTable, key, holder string, now, expires float64, dead func(string) bool) (bool, error) {
	if err := lockLeaseKey(tx, t, key); err != nil {
		return false, err
	}
	row, ok, err := readLease(tx, t, key)
	if err != nil {
		return false, err
	}
	if ok && (!t.live(row.ExpiresAt, now) || (row.Holder != holder && dead(row.Holder))) {
		if err := tx.Exec("DELETE FROM "+t.name+" WHERE "+t.key+" = ? AND holder = ?", key, row.Holder).Error; err != nil {
			return false, err
		}
	}
	if err := tx.Exec("INSERT INTO "+t.name+" ("+t.key+", holder, acquired_at, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT ("+t.key+") DO NOTHING",
		key, holder, now, expires).Error; err != nil {
		return false, err
	}
	row, ok, err = readLease(tx, t, key)
	return ok && row.Holder == holder, err
}

// heldByOther reads, outside any write transaction and on the primary (never
// a replica), whether another holder has a live row under key: a contender
// that would lose is answered without taking the write lock, which keeps N
// waiting contenders from queueing behind the holder's release. The answer
// is the one the claim would give at the time of the read; a free or stale
// row goes on to the claim transaction.
func heldByOther(ctx context.Context, db *DB, t leaseTable, sid, holder string, now float64, dead func(string) bool) bool {
	tx := db.R.WithContext(ctx)
	key := sid
	if t == turnLeaseTable {
		k, err := turnLeaseKey(tx, sid)
		if err != nil {
			return false
		}
		key = k
	}
	row, ok, err := readLease(tx, t, key)
	return err == nil && ok && row.Holder != holder && t.live(row.ExpiresAt, now) && !dead(row.Holder)
}

// leaseArgs validates the common arguments and returns now and the expiry.
func leaseArgs(op, sid, holder string, opt LeaseOptions, minTTL time.Duration) (now, expires float64, dead func(string) bool, err error) {
	if err := checkID(op, sid); err != nil {
		return 0, 0, nil, err
	}
	if holder == "" {
		return 0, 0, nil, errs.Errorf(errs.ErrInvalid, op, "the holder is empty: pass a stable holder id (repo.HolderID builds one)")
	}
	if err := checkText(op, "holder", holder); err != nil {
		return 0, 0, nil, err
	}
	ttl := opt.TTL
	if ttl < 0 {
		return 0, 0, nil, errs.Errorf(errs.ErrInvalid, op, "the lease TTL %s is negative", ttl)
	}
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if ttl < minTTL {
		ttl = minTTL
	}
	dead = opt.HolderDead
	if dead == nil {
		dead = LocalHolderDead
	}
	now = nowOf(opt.Now)
	return now, now + ttl.Seconds(), dead, nil
}

func listLeases(ctx context.Context, db *DB, op string, t leaseTable, now time.Time) ([]Lease, error) {
	at := nowOf(now)
	return Read(ctx, db, op, func(tx *gorm.DB) ([]Lease, error) {
		var rows []leaseRow
		if err := tx.Raw("SELECT " + t.key + " AS k, holder, acquired_at, expires_at FROM " + t.name + " ORDER BY expires_at, " + t.key).Scan(&rows).Error; err != nil {
			return nil, err
		}
		out := make([]Lease, 0, len(rows))
		for _, r := range rows {
			out = append(out, t.lease(r, at))
		}
		return out, nil
	})
}

type turnLeaseRepo struct{ db *DB }

// NewTurnLeases returns the GORM implementation of TurnLeases.
func NewTurnLeases(db *DB) TurnLeases { return &turnLeaseRepo{db} }

func (r *turnLeaseRepo) Get(ctx context.Context, sid string, now time.Time) (Lease, bool, error) {
	const op = "turn_leases.get"
	if err := checkID(op, sid); err != nil {
		return Lease{}, false, err
	}
	at := nowOf(now)
	type out struct {
		l  Lease
		ok bool
	}
	res, err := Read(ctx, r.db, op, func(tx *gorm.DB) (out, error) {
		key, err := turnLeaseKey(tx, sid)
		if err != nil {
			return out{}, err
		}
		row, ok, err := readLease(tx, turnLeaseTable, key)
		if err != nil || !ok {
			return out{}, err
		}
		return out{turnLeaseTable.lease(row, at), true}, nil
	})
	return res.l, res.ok, err
}

func (r *turnLeaseRepo) TryAcquire(ctx context.Context, sid, holder string, opt LeaseOptions) (bool, error) {
	const op = "turn_leases.try_acquire"
	now, expires, dead, err := leaseArgs(op, sid, holder, opt, 100*time.Millisecond)
	if err != nil {
		return false, err
	}
	if heldByOther(ctx, r.db, turnLeaseTable, sid, holder, now, dead) {
		return false, nil
	}
	var got bool
	err = r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := tx.Exec("DELETE FROM session_turn_leases WHERE expires_at < ?", now-turnLeaseSweepGrace).Error; err != nil {
			return err
		}
		key, err := turnLeaseKey(tx, sid)
		if err != nil {
			return err
		}
		got, err = claimLease(tx, turnLeaseTable, key, holder, now, expires, dead)
		return err
	})
	return got, err
}

func (r *turnLeaseRepo) Acquire(ctx context.Context, sid, holder string, opt AcquireOptions) error {
	const op = "turn_leases.acquire"
	poll := opt.Poll
	if poll <= 0 {
		poll = time.Second
	}
	poll = max(poll, 10*time.Millisecond)
	every := opt.NoticeEvery
	if every <= 0 {
		every = 15 * time.Second
	}
	var waitStart, lastNotice time.Time
	for {
		if err := ctx.Err(); err != nil {
			return errs.Wrap(err, op, err, "stopped waiting for the turn lease of session "+sid)
		}
		try := opt.LeaseOptions
		if !try.Now.IsZero() && !waitStart.IsZero() {
			try.Now = try.Now.Add(time.Since(waitStart))
		}
		ok, err := r.TryAcquire(ctx, sid, holder, try)
		switch {
		case err == nil && ok:
			return nil
		case err != nil && errors.Is(err, errs.ErrBusy):
			// A busy database is not a holder: try again at once.
			continue
		case err != nil:
			if c := ctx.Err(); c != nil {
				return errs.Wrap(c, op, c, "stopped waiting for the turn lease of session "+sid)
			}
			return err
		}
		now := time.Now()
		if waitStart.IsZero() {
			waitStart = now
		}
		if opt.OnWait != nil && (lastNotice.IsZero() || now.Sub(lastNotice) >= every) {
			opt.OnWait(now.Sub(waitStart))
			lastNotice = now
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

func (r *turnLeaseRepo) Refresh(ctx context.Context, sid, holder string, opt LeaseOptions) (bool, error) {
	const op = "turn_leases.refresh"
	_, expires, _, err := leaseArgs(op, sid, holder, opt, 100*time.Millisecond)
	if err != nil {
		return false, err
	}
	var ok bool
	err = r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		key, err := turnLeaseKey(tx, sid)
		if err != nil {
			return err
		}
		if err := lockLeaseKey(tx, turnLeaseTable, key); err != nil {
			return err
		}
		res := tx.Exec("UPDATE session_turn_leases SET expires_at = ? WHERE conversation_id = ? AND holder = ?", expires, key, holder)
		ok = res.RowsAffected > 0
		return res.Error
	})
	return ok, err
}

func (r *turnLeaseRepo) Release(ctx context.Context, sid, holder string) (bool, error) {
	const op = "turn_leases.release"
	if _, _, _, err := leaseArgs(op, sid, holder, LeaseOptions{}, 0); err != nil {
		return false, err
	}
	var ok bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		key, err := turnLeaseKey(tx, sid)
		if err != nil {
			return err
		}
		if err := lockLeaseKey(tx, turnLeaseTable, key); err != nil {
			return err
		}
		res := tx.Exec("DELETE FROM session_turn_leases WHERE conversation_id = ? AND holder = ?", key, holder)
		ok = res.RowsAffected > 0
		return res.Error
	})
	return ok, err
}

func (r *turnLeaseRepo) List(ctx context.Context, now time.Time) ([]Lease, error) {
	return listLeases(ctx, r.db, "turn_leases.list", turnLeaseTable, now)
}

type lockRepo struct{ db *DB }

// NewCompressionLocks returns the GORM implementation of CompressionLocks.
func NewCompressionLocks(db *DB) CompressionLocks { return &lockRepo{db} }

func (r *lockRepo) Get(ctx context.Context, sid string, now time.Time) (Lease, bool, error) {
	const op = "compression_locks.get"
	if err := checkID(op, sid); err != nil {
		return Lease{}, false, err
	}
	at := nowOf(now)
	type out struct {
		l  Lease
		ok bool
	}
	res, err := Read(ctx, r.db, op, func(tx *gorm.DB) (out, error) {
		row, ok, err := readLease(tx, lockTable, sid)
		if err != nil || !ok {
			return out{}, err
		}
		return out{lockTable.lease(row, at), true}, nil
	})
	return res.l, res.ok, err
}

func (r *lockRepo) TryAcquire(ctx context.Context, sid, holder string, opt LeaseOptions) (bool, error) {
	const op = "compression_locks.try_acquire"
	now, expires, dead, err := leaseArgs(op, sid, holder, opt, 0)
	if err != nil {
		return false, err
	}
	if heldByOther(ctx, r.db, lockTable, sid, holder, now, dead) {
		return false, nil
	}
	var got bool
	err = r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var err error
		got, err = claimLease(tx, lockTable, sid, holder, now, expires, dead)
		return err
	})
	return got, err
}

func (r *lockRepo) Refresh(ctx context.Context, sid, holder string, opt LeaseOptions) (bool, error) {
	const op = "compression_locks.refresh"
	_, expires, _, err := leaseArgs(op, sid, holder, opt, 0)
	if err != nil {
		return false, err
	}
	var ok bool
	err = r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockLeaseKey(tx, lockTable, sid); err != nil {
			return err
		}
		res := tx.Exec("UPDATE compression_locks SET expires_at = ? WHERE session_id = ? AND holder = ?", expires, sid, holder)
		ok = res.RowsAffected > 0
		return res.Error
	})
	return ok, err
}

func (r *lockRepo) Release(ctx context.Context, sid, holder string) (bool, error) {
	const op = "compression_locks.release"
	if _, _, _, err := leaseArgs(op, sid, holder, LeaseOptions{}, 0); err != nil {
		return false, err
	}
	var ok bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockLeaseKey(tx, lockTable, sid); err != nil {
			return err
		}
		res := tx.Exec("DELETE FROM compression_locks WHERE session_id = ? AND holder = ?", sid, holder)
		ok = res.RowsAffected > 0
		return res.Error
	})
	return ok, err
}

func (r *lockRepo) List(ctx context.Context, now time.Time) ([]Lease, error) {
	return listLeases(ctx, r.db, "compression_locks.list", lockTable, now)
}
