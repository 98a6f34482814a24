package hermesstate

import "github.com/hermesstate/hermesstate/repo"

// Titles returns the title repository (set/clear, resolve, next in lineage).
func (s *Store) Titles() repo.Titles { return repo.NewTitles(s.db) }

// Meta returns the state_meta repository.
func (s *Store) Meta() repo.Meta { return repo.NewMeta(s.db) }

// Routing returns the gateway_routing repository.
func (s *Store) Routing() repo.Routing { return repo.NewRouting(s.db) }

// Lineage returns the lineage repository (parent chains, compression tips,
// id resolution, lineage-wide archived/pinned/hidden flags).
func (s *Store) Lineage() repo.Lineage { return repo.NewLineage(s.db) }

// Listing returns the listing repository (rich listing with previews,
// recent activity, counts).
func (s *Store) Listing() repo.Listing { return repo.NewListing(s.db) }

// Portability returns the export/import repository (JSONL, Markdown).
func (s *Store) Portability() repo.Portability { return repo.NewPortability(s.db) }

// Cleanup returns the cleanup repository (delete, clear, prune, vacuum,
// backup).
func (s *Store) Cleanup() repo.Cleanup { return repo.NewCleanup(s.db) }

// Usage returns the usage repository (auxiliary attribution, statistics).
func (s *Store) Usage() repo.Usage { return repo.NewUsage(s.db) }

// Inspect returns the read-only probes (archived messages, distinct cwds).
func (s *Store) Inspect() repo.Inspect { return repo.NewInspect(s.db) }

// Transcript returns the transcript repository (get_messages options,
// window around a message, replace, targeted delete and clear, latest-row
// probes, api_content and display-kind stamps).
func (s *Store) Transcript() repo.Transcript { return repo.NewTranscript(s.db) }

// Rewind returns the rewind repository (active ids, rewind to a message or
// a user turn).
func (s *Store) Rewind() repo.Rewind { return repo.NewRewind(s.db) }

// Compaction returns the compaction and resume repository (watermark,
// archive_and_compact, resume conversations and counts, resume target,
// conversation root, fork-child test).
func (s *Store) Compaction() repo.Compaction { return repo.NewCompaction(s.db) }

// SessionState returns the per-session state repository (ensure, model and
// model_config updates, cwd and git metadata, tools[] pin, activity labels,
// reset promotion, read watermark, recoverable un-archive, bulk archive,
// lifecycle statuses).
func (s *Store) SessionState() repo.SessionState { return repo.NewSessionState(s.db) }

// Lookup returns the lookup repository (search by id, one enriched row, a
// cron job's runs).
func (s *Store) Lookup() repo.Lookup { return repo.NewLookup(s.db) }

// Gateway returns the gateway repository (routing index replacement,
// entry by session, gateway session listing, origin and peer lookups,
// expiry flag, never-active keyed sessions).
func (s *Store) Gateway() repo.Gateway { return repo.NewGateway(s.db) }
