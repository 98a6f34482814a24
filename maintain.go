package hermesstate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/safefile"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// MaintenanceConfig turns on automatic maintenance (Config.Maintenance): at
// most once per Every, shortly after Open, a background run of Maintain
// with these options. Nil (the default) never maintains automatically.
type MaintenanceConfig struct {
	// Every is the least time between two runs (recorded in state_meta
	// hermesstate_last_maintenance, shared by every process); default 24 h.
	Every time.Duration
	// Options are what each run does.
	Options MaintenanceOptions
}

// MaxRetentionDays is the largest MaintenanceOptions.RetentionDays (and
// the CLI's --prune-days and --older-than-days): about 274 years, within
// the 292 years a time.Duration holds, so a day count never overflows into
// a short span that would prune recent sessions.
const MaxRetentionDays = 100000

// MaintenanceOptions configures Maintain. The zero value only checkpoints.
type MaintenanceOptions struct {
	// RetentionDays > 0 prunes ended, unpinned sessions whose last activity
	// is older (repo.Cleanup.Prune, Hermes' prune rules); at most
	// MaxRetentionDays.
	RetentionDays int
	// Vacuum compacts the file when more than 25 % of its pages are free.
	Vacuum bool
	// BackupDir, when set, receives a VACUUM INTO snapshot
	// (state-YYYYMMDD-HHMMSS.db) before anything is pruned.
	BackupDir string
	// BackupKeep is how many snapshots to keep in BackupDir (oldest removed
	// first); default 7.
	BackupKeep int
	// Progress, when set, is called as steps advance.
	Progress func(step string, done, total int64)
}

// MaintenanceReport says what Maintain did.
type MaintenanceReport struct {
	Backup         string             `json:"backup,omitempty"`
	BackupsRemoved []string           `json:"backups_removed"`
	Pruned         int64              `json:"pruned"`
	Vacuum         *repo.VacuumResult `json:"vacuum,omitempty"`
	Checkpointed   bool               `json:"checkpointed"`
	Elapsed        string             `json:"elapsed"`
}

// Maintain runs the maintenance opts selects, in this order: a backup
// snapshot with rotation, the retention prune (then the CJK index drops
// the pruned messages' postings), VACUUM when more than a
// quarter of the pages are free (repo.Cleanup.Vacuum), and a TRUNCATE WAL
// checkpoint. It returns ErrUnsupported on PostgreSQL, ErrInvalid for bad
// options, and the failing step's error (ErrBusy, ErrStorage, ...) with the
// report of the steps that completed.
func (s *Store) Maintain(ctx context.Context, opts MaintenanceOptions) (*MaintenanceReport, error) {
	const op = "maintain"
	start := time.Now()
	rep := &MaintenanceReport{BackupsRemoved: []string{}}
	defer func() { rep.Elapsed = time.Since(start).Round(time.Millisecond).String() }()
	if s.cfg.Driver == DriverPostgres {
		return rep, errs.Errorf(ErrUnsupported, op, "maintenance of a PostgreSQL store is the server's (autovacuum, pg_dump)")
	}
	if opts.RetentionDays < 0 || opts.BackupKeep < 0 {
		return rep, errs.Errorf(ErrInvalid, op, "retention days and backups to keep must not be negative")
	}
	if opts.RetentionDays > MaxRetentionDays {
		return rep, errs.Errorf(ErrInvalid, op, "retention days must be at most %d (got %d)", MaxRetentionDays, opts.RetentionDays)
	}
	if opts.BackupKeep == 0 {
		opts.BackupKeep = 7
	}
	progress := func(step string) repo.Progress {
		if opts.Progress == nil {
			return nil
		}
		return func(done, total int64) { opts.Progress(step, done, total) }
	}
	if opts.BackupDir != "" {
		path, removed, err := s.backupRotate(ctx, opts.BackupDir, opts.BackupKeep, progress("backup"))
		rep.Backup, rep.BackupsRemoved = path, removed
		if err != nil {
			return rep, err
		}
	}
	if opts.RetentionDays > 0 {
		res, err := s.Cleanup().Prune(ctx, repo.PruneOptions{OlderThan: time.Duration(opts.RetentionDays) * 24 * time.Hour, Progress: progress("prune")})
		rep.Pruned = res.Deleted
		if err != nil {
			return rep, err
		}
		if res.Deleted > 0 && !s.cfg.ReadOnly {
			// Drop the CJK postings of the pruned messages.
			if _, err := s.Search().CatchUp(ctx, 0); err != nil {
				return rep, err
			}
		}
	}
	if opts.Vacuum {
		v, err := s.Cleanup().Vacuum(ctx, false)
		rep.Vacuum = &v
		if err != nil {
			return rep, err
		}
	}
	if s.journal == "wal" && !s.cfg.ReadOnly {
		s.checkpoint(ctx, "TRUNCATE")
		rep.Checkpointed = true
	}
	return rep, nil
}

// backupRotate writes dir/state-<UTC time>.db with VACUUM INTO (progress:
// bytes written against the live pages) and removes the oldest snapshots
// beyond keep.
func (s *Store) backupRotate(ctx context.Context, dir string, keep int, progress repo.Progress) (string, []string, error) {
	const op = "maintain.backup"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, errtext.Storage(op, err, "cannot create "+dir, "")
	}
	name := "state-" + time.Now().UTC().Format("20060102-150405.000000000") + ".db"
	path := filepath.Join(dir, strings.Replace(name, ".", "-", 1))
	var total int64
	if progress != nil {
		var pc, fc, ps int64
		w := s.db.W.WithContext(ctx)
		w.Raw("PRAGMA page_count").Scan(&pc)
		w.Raw("PRAGMA freelist_count").Scan(&fc)
		w.Raw("PRAGMA page_size").Scan(&ps)
		total = (pc - fc) * ps
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if progress != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					// The backup is written under a temporary name first.
					tmps, _ := filepath.Glob(filepath.Join(dir, repo.BackupTempPrefix+strconv.Itoa(os.Getpid())+"-*"))
					for _, p := range tmps {
						if st, err := os.Stat(p); err == nil {
							progress(min(st.Size(), total), total)
						}
					}
				}
			}
		}()
	}
	err := s.Cleanup().Backup(ctx, path)
	close(stop)
	wg.Wait()
	if err != nil {
		return "", nil, err
	}
	if progress != nil {
		progress(total, total)
	}
	// Only complete backups count: a partial file under a backup's name
	// (written by an older version that was killed, or copied in by hand)
	// must not push good backups out.
	all, _ := filepath.Glob(filepath.Join(dir, "state-*.db"))
	var matches []string
	for _, m := range all {
		if safefile.CompleteSQLite(m) {
			matches = append(matches, m)
		}
	}
	sort.Strings(matches) // the names sort by time
	var removed []string
	for len(matches) > keep {
		if err := os.Remove(matches[0]); err != nil {
			return path, removed, errtext.Storage(op, err, "cannot remove the old backup "+matches[0], "")
		}
		removed = append(removed, matches[0])
		matches = matches[1:]
	}
	return path, removed, nil
}

const lastMaintenanceKey = "hermesstate_last_maintenance"

// autoMaintenance runs in the background after Open when
// Config.Maintenance is set; Close cancels and waits for it.
type autoMaintenance struct {
	cancel context.CancelFunc
	done   chan struct{}
	last   *MaintenanceReport
	err    error
}

func (s *Store) startAutoMaintenance() {
	mc := s.cfg.Maintenance
	if mc == nil || s.cfg.ReadOnly || s.cfg.Driver == DriverPostgres {
		return
	}
	every := mc.Every
	if every <= 0 {
		every = 24 * time.Hour
	}
	ctx, cancel := context.WithCancel(context.Background())
	am := &autoMaintenance{cancel: cancel, done: make(chan struct{})}
	s.auto = am
	go func() {
		defer close(am.done)
		v, ok, err := s.Meta().Get(ctx, lastMaintenanceKey)
		if err != nil {
			am.err = err
			return
		}
		if ok {
			var last float64
			if _, err := fmt.Sscan(v, &last); err == nil && time.Since(models.Epoch(last).Time()) < every {
				return
			}
		}
		// Claim the run first, so other processes opening now skip it.
		if err := s.Meta().Set(ctx, lastMaintenanceKey, fmt.Sprint(float64(models.Now()))); err != nil {
			am.err = err
			return
		}
		am.last, am.err = s.Maintain(ctx, mc.Options)
		if am.err != nil {
			s.cfg.Logger.Warn("hermesstate: automatic maintenance failed", "err", am.err)
		}
	}()
}

// stopAutoMaintenance cancels a running automatic maintenance and waits.
func (s *Store) stopAutoMaintenance() {
	if s.auto != nil {
		s.auto.cancel()
		<-s.auto.done
	}
}

// LastAutoMaintenance waits for the automatic maintenance started by Open
// (if any) and returns its report: nil when none ran (not configured, or
// the last run is more recent than Every).
func (s *Store) LastAutoMaintenance() (*MaintenanceReport, error) {
	if s.auto == nil {
		return nil, nil
	}
	<-s.auto.done
	return s.auto.last, s.auto.err
}
