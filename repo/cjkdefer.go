package repo

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/ftsql"
)

// Deferred CJK indexing of appended messages.
//
// Every message insert queues its id for the CJK index (a trigger, so
// Hermes' own writes are queued too). Indexing one message at a time wrote
// a posting chunk per CJK bigram, on as many b-tree pages, in every append
// transaction: about 5.6 M instructions per CJK message against 1.9 M for
// the rest of the append (callgrind), and a DELETE statement from the queue
// for every other message. The ids of this store's inserts are now
// collected in memory and handled in batches of CJKDeferBatch rows inside a
// later insert transaction, where the bigrams of many messages share chunks
// and pages. The batch reads the rows' current text back (one statement):
// a row changed, deleted or reused by another writer since its insert is
// handled by what it holds now. Until then the rows stay in the queue,
// where the index's readers already look: a CJK search catches the queue
// up first and treats queued rows as candidates, so results never depend
// on the batching. Close flushes what is left; ids of a process that dies
// stay queued and are caught up by the next search or CatchUp.

// CJKDeferBatch is the number of collected inserted rows that makes the
// next insert transaction index (or dequeue) them. Each batch rewrites the
// posting chunk of every CJK term its rows hold, so a larger batch shares
// more of them: at 64 the batches took 12 % of an append's CPU on the
// shared corpus (about 130 µs per append); 256 cut the appends' CPU by
// about 9 % against the raw-SQL floor measured beside them (issue 13). A
// CJK search catches up at most a batch of queued rows.
const CJKDeferBatch = 256

type cjkDeferral struct {
	mu  sync.Mutex
	ids []int64
}

// deferCJK records ids and, once a batch is collected, indexes (or
// dequeues) the batch with tx, the insert's transaction. A failure leaves
// the rows queued, where searches find them.
func (d *DB) deferCJK(tx *gorm.DB, ids []int64) {
	c := &d.cjkDefer
	c.mu.Lock()
	c.ids = append(c.ids, ids...)
	if len(c.ids) < CJKDeferBatch {
		c.mu.Unlock()
		return
	}
	batch := c.ids
	c.ids = nil
	c.mu.Unlock()
	_, _ = ftsql.IndexPendingIDs(tx, batch)
}

// FlushDeferredIndexing indexes or dequeues the collected rows now, in one
// write transaction on the writer connection (the store calls it at Close,
// after the last group commit, when other writes are refused). On failure
// the rows stay queued.
func (d *DB) FlushDeferredIndexing(ctx context.Context) error {
	c := &d.cjkDefer
	c.mu.Lock()
	batch := c.ids
	c.ids = nil
	c.mu.Unlock()
	if len(batch) == 0 || d.Dialect != SQLite {
		return nil
	}
	// One attempt (write lock file and BEGIN IMMEDIATE, as every write),
	// bounded: at Close nobody waits for it.
	return d.attempt(ctx, time.Now().Add(2*time.Second), func(tx *gorm.DB) error {
		_, err := ftsql.IndexPendingIDs(tx, batch)
		return err
	})
}
