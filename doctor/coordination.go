package doctor

import (
	"database/sql"
	"errors"
	"time"
)

// CheckCoordination names the findings about Hermes' coordination rows:
// expired turn leases and compression locks, and handoffs left running.
const CheckCoordination = "coordination"

// Fixes of the coordination findings (`hermes-state maintain` steps).
const (
	FixExpiredLeases = "hermes-state maintain --expired-leases"
	FixStaleHandoffs = "hermes-state maintain --stale-handoffs (only while no gateway runs: a running handoff is a gateway's dispatch in flight)"
)

// coordination reports, as information (they are never damage: the next
// claimer reclaims an expired row), expired turn leases and compression
// locks, and handoffs in state running, each with the command that clears
// them. It reads only; a store without the tables has nothing to report.
func (c *checker) coordination() {
	now := float64(time.Now().UnixNano()) / 1e9
	count := func(q string, args ...any) (int64, bool) {
		var n int64
		if err := c.db.QueryRowContext(c.ctx, q, args...).Scan(&n); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, false
		}
		return n, true
	}
	has := func(table string) bool { return c.objects["table"][table] != "" }
	if has("session_turn_leases") {
		if n, ok := count("SELECT COUNT(*) FROM session_turn_leases WHERE expires_at <= ?", now); ok && n > 0 {
			c.r.add(CheckCoordination, Info, "session_turn_leases", FixExpiredLeases,
				"%d expired turn lease(s): their holders stopped refreshing them; the next turn of those conversations reclaims them", n)
		}
	}
	if has("compression_locks") {
		if n, ok := count("SELECT COUNT(*) FROM compression_locks WHERE expires_at < ?", now); ok && n > 0 {
			c.r.add(CheckCoordination, Info, "compression_locks", FixExpiredLeases,
				"%d expired compression lock(s): the next compression of those sessions reclaims them", n)
		}
	}
	if n, ok := count("SELECT COUNT(*) FROM sessions WHERE handoff_state = 'running'"); ok && n > 0 {
		c.r.add(CheckCoordination, Info, "sessions.handoff_state", FixStaleHandoffs,
			"%d handoff(s) in state running: a gateway is dispatching them, or died doing so (its watcher fails them at its next start)", n)
	}
}
