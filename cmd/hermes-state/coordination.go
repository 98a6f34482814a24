package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/termtext"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// Hermes' coordination rows where people look (issue 30): `sessions show`
// prints a session's turn lease, compression lock and handoff, `sessions
// leases` lists them all. Both only read: nothing takes, refreshes or clears
// a lease.

// sessionView is what `sessions show --json` prints: the session row and
// the coordination rows that concern it.
type sessionView struct {
	*models.Session
	TurnLease       *repo.Lease `json:"turn_lease,omitempty"`
	CompressionLock *repo.Lease `json:"compression_lock,omitempty"`
}

// coordinationOf reads the session's lease and lock (read-only).
func coordinationOf(ctx context.Context, st *hs.Store, s *models.Session) (sessionView, error) {
	v := sessionView{Session: s}
	now := time.Now()
	if l, ok, err := st.TurnLeases().Get(ctx, s.ID, now); err != nil {
		return v, err
	} else if ok {
		v.TurnLease = &l
	}
	if l, ok, err := st.CompressionLocks().Get(ctx, s.ID, now); err != nil {
		return v, err
	} else if ok {
		v.CompressionLock = &l
	}
	return v, nil
}

// printable is stored text on one line of a report: the terminal's
// controls neutralised as every CLI text is (internal/termtext), and line
// breaks and tabs shown as escapes so a value written by another program
// cannot break the line either.
func printable(s string) string {
	return termtext.Clean(lineBreaks.Replace(s))
}

var lineBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`, "\u2028", `\u2028`, "\u2029", `\u2029`)

// leaseLine says who holds a lease and until when.
func leaseLine(l *repo.Lease) string {
	if l == nil {
		return ""
	}
	state := "until"
	if !l.Live {
		state = "expired at"
	}
	key := ""
	if l.Key != "" {
		key = " (conversation " + printable(l.Key) + ")"
	}
	return fmt.Sprintf("held by %s %s %s%s", printable(l.Holder), state, localTime(l.ExpiresAt), key)
}

// handoffLine says a session's handoff state.
func handoffLine(s *models.Session) string {
	state := ptr.Deref(s.HandoffState)
	if state == "" {
		return ""
	}
	line := printable(state)
	if p := ptr.Deref(s.HandoffPlatform); p != "" {
		line += " to " + printable(p)
	}
	if e := ptr.Deref(s.HandoffError); e != "" {
		line += ": " + printable(cut(e, 200))
	}
	return line
}

// coordinationLease is the turn-lease line of a session (the conversation
// named only when the lease is keyed by another segment of the lineage).
func coordinationLease(v sessionView) string {
	if v.TurnLease == nil {
		return ""
	}
	l := *v.TurnLease
	if l.Key == v.ID {
		l.Key = ""
	}
	return leaseLine(&l)
}

// leasesView is what `sessions leases` prints.
type leasesView struct {
	TurnLeases       []repo.Lease     `json:"turn_leases"`
	CompressionLocks []repo.Lease     `json:"compression_locks"`
	Handoffs         []models.Session `json:"handoffs"`
}

func sessionsLeasesCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "leases",
		Short: "List turn leases, compression locks and handoffs in flight (reads only: nothing is taken or cleared)",
		Args:  cobra.NoArgs,
		RunE: a.withStore(reads, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
			ctx, now := cmd.Context(), time.Now()
			var v leasesView
			var err error
			if v.TurnLeases, err = st.TurnLeases().List(ctx, now); err != nil {
				return err
			}
			if v.CompressionLocks, err = st.CompressionLocks().List(ctx, now); err != nil {
				return err
			}
			if v.Handoffs, err = st.Handoffs().Pending(ctx, repo.PendingOptions{}); err != nil {
				return err
			}
			return a.emit(v, func(w io.Writer) error {
				if len(v.TurnLeases)+len(v.CompressionLocks)+len(v.Handoffs) == 0 {
					_, err := fmt.Fprintln(w, "no turn lease, compression lock or pending handoff")
					return err
				}
				tw := table(w)
				for _, l := range v.TurnLeases {
					fmt.Fprintf(tw, "turn lease\t%s\t%s\n", printable(l.Key), leaseLine(&repo.Lease{Holder: l.Holder, ExpiresAt: l.ExpiresAt, Live: l.Live}))
				}
				for _, l := range v.CompressionLocks {
					fmt.Fprintf(tw, "compression\t%s\t%s\n", printable(l.Key), leaseLine(&repo.Lease{Holder: l.Holder, ExpiresAt: l.ExpiresAt, Live: l.Live}))
				}
				for i := range v.Handoffs {
					fmt.Fprintf(tw, "handoff\t%s\t%s\n", printable(v.Handoffs[i].ID), handoffLine(&v.Handoffs[i]))
				}
				return tw.Flush()
			})
		}),
	}
}

// housekeepFlags declares maintain's housekeeping steps.
type housekeepFlags struct {
	sweepIdle, archiveIdle, heartbeats time.Duration
	sweepSources                       []string
	ghosts, handoffs, leases, orphans  bool
}

func (f *housekeepFlags) declare(c *cobra.Command) {
	c.Flags().DurationVar(&f.sweepIdle, "sweep-orphans", 0, "close open sessions of --sweep-source idle for longer than this (Hermes' startup orphan sweep; a live lease spares a row)")
	c.Flags().StringSliceVar(&f.sweepSources, "sweep-source", nil, "sources the orphan sweep closes (default tui, desktop, subagent; never a messaging platform)")
	c.Flags().DurationVar(&f.archiveIdle, "archive-idle", 0, "archive conversations whose last activity is older than this (pinned ones kept)")
	c.Flags().BoolVar(&f.ghosts, "ghosts", false, "delete the TUI's empty ghost sessions (untitled, ended, over a day old, no messages)")
	c.Flags().DurationVar(&f.heartbeats, "stale-heartbeats", 0, "delete gateway heartbeats older than this")
	c.Flags().BoolVar(&f.handoffs, "stale-handoffs", false, "fail handoffs left running (only while no gateway runs)")
	c.Flags().BoolVar(&f.leases, "expired-leases", false, "delete expired turn leases and compression locks")
	c.Flags().BoolVar(&f.orphans, "orphaned-compression", false, "end week-old compression continuations that never answered (orphaned_compression)")
}

// options returns the Housekeep options, or nil when no step was asked.
func (f *housekeepFlags) options() *hs.HousekeepOptions {
	o := hs.HousekeepOptions{Ghosts: f.ghosts, StaleHeartbeats: f.heartbeats, StaleHandoffs: f.handoffs,
		ExpiredLeases: f.leases, OrphanedCompression: f.orphans}
	if f.sweepIdle > 0 {
		o.SweepOrphans = &repo.SweepOptions{MaxIdle: f.sweepIdle, Sources: splitList(f.sweepSources)}
	}
	if f.archiveIdle > 0 {
		o.ArchiveStale = &repo.ArchiveStaleOptions{IdleFor: f.archiveIdle}
	}
	if o.SweepOrphans == nil && o.ArchiveStale == nil && !o.Ghosts && o.StaleHeartbeats == 0 && !o.StaleHandoffs && !o.ExpiredLeases && !o.OrphanedCompression {
		return nil
	}
	return &o
}

func (f *housekeepFlags) check(cmd *cobra.Command) error {
	for name, d := range map[string]time.Duration{"sweep-orphans": f.sweepIdle, "archive-idle": f.archiveIdle, "stale-heartbeats": f.heartbeats} {
		if d < 0 {
			return usagef(cmd, "--%s must not be negative", name)
		}
	}
	return nil
}

// printHousekeep writes a line per housekeeping step taken.
func printHousekeep(w io.Writer, o *hs.HousekeepOptions, rep *hs.HousekeepReport) {
	if o.ExpiredLeases {
		fmt.Fprintf(w, "leases     %s and %s expired, cleared\n", plural(rep.ExpiredLeases, "turn lease", ""), plural(rep.ExpiredLocks, "compression lock", ""))
	}
	if o.StaleHeartbeats > 0 {
		fmt.Fprintf(w, "heartbeats %s older than %s deleted\n", plural(int64(len(rep.Heartbeats)), "heartbeat", ""), o.StaleHeartbeats)
	}
	if o.StaleHandoffs {
		fmt.Fprintf(w, "handoffs   %s left running failed\n", plural(int64(len(rep.Handoffs)), "handoff", ""))
	}
	if o.SweepOrphans != nil {
		fmt.Fprintf(w, "swept      %s idle for over %s closed (startup_orphan_reap)\n", plural(int64(len(rep.Swept)), "open session", ""), o.SweepOrphans.MaxIdle)
	}
	if o.OrphanedCompression {
		fmt.Fprintf(w, "orphaned   %s ended (orphaned_compression)\n", plural(rep.OrphanedCompression, "compression continuation", ""))
	}
	if rep.Archived != nil {
		fmt.Fprintf(w, "archived   %s idle for over %s\n", plural(int64(rep.Archived.Archived), "conversation", ""), o.ArchiveStale.IdleFor)
	}
	if o.Ghosts {
		fmt.Fprintf(w, "ghosts     %s deleted\n", plural(int64(rep.Ghosts), "empty TUI session", ""))
	}
}
