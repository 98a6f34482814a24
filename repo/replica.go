package repo

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// Read replicas (PostgreSQL hot standbys). Reads (listing, search, export,
// browse, MCP) go to a replica when it is known to be fresh enough, else
// to the primary; writes never go to a replica. The rules:
//
//   - Read your writes. After a write of this process commits, the next
//     read takes the primary's WAL insert position (pg_current_wal_insert_lsn,
//     at or past the commit) as the watermark; a replica serves a read only
//     once its replay position (pg_last_wal_replay_lsn) has reached the
//     watermark, so a read never sees less than this process wrote (the
//     transcript of a session it just appended to, the counters after an
//     append). Until then reads go to the primary.
//   - Lag. A replica whose replay is behind what it has received by more
//     than MaxLag (now - pg_last_xact_replay_timestamp()) is skipped.
//   - Down. A replica that cannot be reached, is not a standby, or fails a
//     read is skipped for DownFor and the read runs on the primary: a
//     replica costs speed, never an answer.
//
// A replica's state is read at most once per CheckEvery while nothing
// changed (one short query), and again when a write raised the watermark.

// Replica is one read-only standby's pool.
type Replica struct {
	Name string // for logs: the DSN without its password
	DB   *gorm.DB

	downUntil atomic.Int64  // unix nanos
	replayed  atomic.Uint64 // last seen pg_last_wal_replay_lsn
	lag       atomic.Int64  // last seen lag, nanoseconds
	checkedAt atomic.Int64  // unix nanos of the last state query
	lastErr   atomic.Pointer[string]
}

// Replicas is the set of read replicas of a store.
type Replicas struct {
	List []*Replica
	// MaxLag: a replica further behind is not read (default 5 s).
	MaxLag time.Duration
	// CheckEvery: how long a replica's state is trusted (default 1 s).
	CheckEvery time.Duration
	// DownFor: how long a failed replica is left alone (default 5 s).
	DownFor time.Duration

	next      atomic.Uint32
	dirty     atomic.Bool
	watermark atomic.Uint64
	mu        sync.Mutex // serialises the watermark query
	served    atomic.Int64
	fallbacks atomic.Int64
}

// ReplicaStats counts the reads a store's replicas served and the reads
// that fell back to the primary (no replica fresh enough, or one failed).
type ReplicaStats struct {
	Served, Fallbacks int64
}

// Stats returns the counters (zero without replicas).
func (rs *Replicas) Stats() ReplicaStats {
	if rs == nil {
		return ReplicaStats{}
	}
	return ReplicaStats{Served: rs.served.Load(), Fallbacks: rs.fallbacks.Load()}
}

// MarkWritten records that this process committed (or may have committed)
// a write: the next read first learns the primary's WAL position.
func (d *DB) MarkWritten() {
	if d.Replicas != nil {
		d.Replicas.dirty.Store(true)
	}
}

// parseLSN reads PostgreSQL's "X/Y" LSN.
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("not an LSN: %q", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, err
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, err
	}
	return h<<32 | l, nil
}

// replicaFor returns the replica a read should use now, or nil for the
// primary.
func (d *DB) replicaFor(ctx context.Context) *Replica {
	rs := d.Replicas
	if rs == nil || len(rs.List) == 0 {
		return nil
	}
	if rs.dirty.Load() {
		rs.mu.Lock()
		if rs.dirty.Swap(false) {
			var lsn string
			if err := d.W.WithContext(ctx).Raw("SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn).Error; err != nil {
				rs.dirty.Store(true)
				rs.mu.Unlock()
				return nil
			}
			if v, err := parseLSN(lsn); err == nil && v > rs.watermark.Load() {
				rs.watermark.Store(v)
			}
		}
		rs.mu.Unlock()
	}
	want := rs.watermark.Load()
	n := len(rs.List)
	start := int(rs.next.Add(1))
	now := time.Now()
	for i := 0; i < n; i++ {
		r := rs.List[(start+i)%n]
		if now.UnixNano() < r.downUntil.Load() {
			continue
		}
		if r.replayed.Load() < want || now.UnixNano()-r.checkedAt.Load() > int64(rs.checkEvery()) {
			if err := r.check(ctx); err != nil {
				rs.markDown(d, r, err)
				continue
			}
		}
		if r.replayed.Load() >= want && time.Duration(r.lag.Load()) <= rs.maxLag() {
			return r
		}
	}
	return nil
}

func (rs *Replicas) maxLag() time.Duration {
	if rs.MaxLag > 0 {
		return rs.MaxLag
	}
	return 5 * time.Second
}

func (rs *Replicas) checkEvery() time.Duration {
	if rs.CheckEvery > 0 {
		return rs.CheckEvery
	}
	return time.Second
}

func (rs *Replicas) downFor() time.Duration {
	if rs.DownFor > 0 {
		return rs.DownFor
	}
	return 5 * time.Second
}

// markDown leaves r alone for DownFor after err.
func (rs *Replicas) markDown(d *DB, r *Replica, err error) {
	msg := err.Error()
	if old := r.lastErr.Swap(&msg); old == nil || *old != msg {
		d.logger().Warn("hermesstate: read replica not used; reads go to the primary", "replica", r.Name, "for", rs.downFor(), "err", msg)
	}
	r.downUntil.Store(time.Now().Add(rs.downFor()).UnixNano())
}

// check reads r's replay position and lag.
func (r *Replica) check(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var st struct {
		Recovery bool
		Replay   sql.NullString
		Lag      sql.NullFloat64
	}
	err := r.DB.WithContext(cctx).Raw(`SELECT pg_is_in_recovery() AS recovery, pg_last_wal_replay_lsn()::text AS replay,
		CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
			ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) END AS lag`).Scan(&st).Error
	if err != nil {
		return err
	}
	if !st.Recovery || !st.Replay.Valid {
		return fmt.Errorf("not a hot standby (pg_is_in_recovery() is false): only a streaming standby of the primary can serve reads")
	}
	v, err := parseLSN(st.Replay.String)
	if err != nil {
		return err
	}
	r.replayed.Store(v)
	r.lag.Store(int64(st.Lag.Float64 * float64(time.Second)))
	r.checkedAt.Store(time.Now().UnixNano())
	r.lastErr.Store(nil)
	return nil
}
