package hermesstate

import (
	"context"

	"github.com/hermesstate/hermesstate/repo"
)

// The repositories of Hermes' coordination tables and the remaining
// SessionDB operations (issue 30; docs/hermes-coordination.md).

// TurnLeases returns the session_turn_leases repository (which process
// answers in a conversation).
func (s *Store) TurnLeases() repo.TurnLeases { return repo.NewTurnLeases(s.db) }

// CompressionLocks returns the compression_locks repository (who summarises
// a session).
func (s *Store) CompressionLocks() repo.CompressionLocks { return repo.NewCompressionLocks(s.db) }

// Heartbeats returns the gateway_heartbeats repository (which gateway
// backends are alive).
func (s *Store) Heartbeats() repo.Heartbeats { return repo.NewHeartbeats(s.db) }

// Handoffs returns the handoff repository (moving a conversation between
// platforms: request, claim, complete, fail, reclaim).
func (s *Store) Handoffs() repo.Handoffs { return repo.NewHandoffs(s.db) }

// Compressor returns the compressor's repository (rotation, recovery,
// failure cooldown, anti-thrash counters).
func (s *Store) Compressor() repo.Compressor { return repo.NewCompressor(s.db) }

// Peers returns the gateway's per-chat state repository (hygiene streaks,
// input owner, routing peers, orphaned sessions, profile rename/delete).
func (s *Store) Peers() repo.Peers { return repo.NewPeers(s.db) }

// Routes returns the runtime-route repository (runtime lock, YOLO flag,
// billing route).
func (s *Store) Routes() repo.Routes { return repo.NewRoutes(s.db) }

// Delegations returns the async_delegations repository (background
// delegations and the delivery of their results).
func (s *Store) Delegations() repo.Delegations { return repo.NewDelegations(s.db) }

// Annotations returns the message-annotation repository (reactions, tool
// retry outcomes).
func (s *Store) Annotations() repo.Annotations { return repo.NewAnnotations(s.db) }

// Views returns the read views (anchored view, ancestor display prefix,
// pull-request mentions, skill-scaffolded sessions, project message clocks).
func (s *Store) Views() repo.Views { return repo.NewViews(s.db) }

// Housekeeping returns Hermes' housekeeping (orphan sweep, stale archive,
// ghost sessions, expired leases, one-off repairs, FTS optimize).
func (s *Store) Housekeeping() repo.Housekeeping { return repo.NewHousekeeping(s.db) }

// Inventory returns the classification reads (sessions per source, prune
// counts, Kanban ownership, declared scope).
func (s *Store) Inventory() repo.Inventory { return repo.NewInventory(s.db) }

// TokenQueue returns the store's asynchronous token accounting (Hermes'
// queue_token_counts / flush_token_counts); the store's Close flushes it.
func (s *Store) TokenQueue() repo.TokenQueue {
	s.tokensOnce.Do(func() { s.tokens = repo.NewTokenQueue(s.db) })
	return s.tokens
}

// closeTokenQueue flushes queued token counts before the store closes;
// the queue then applies synchronously (and fails with ErrClosed).
func (s *Store) closeTokenQueue() {
	_ = s.TokenQueue().Close(context.Background())
}

// TelegramTopics returns Telegram DM topic mode (its tables are created when
// a chat opts in).
func (s *Store) TelegramTopics() repo.TelegramTopics { return repo.NewTelegramTopics(s.db) }

// ProfileRepair returns crossed-profile repair (`hermes sessions
// repair-profiles`'s store operations).
func (s *Store) ProfileRepair() repo.ProfileRepair { return repo.NewProfileRepair(s.db) }
