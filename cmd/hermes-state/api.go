package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/safefile"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/repo"
)

func init() {
	commands = append(commands, statsCmd, exportCmd, importCmd, pruneCmd, deleteCmd, backupCmd)
}

// progress returns a progress callback drawing a bar on stderr, or nil
// when stderr is not a terminal (or output is JSON).
func (a *app) progress(what string) (repo.Progress, func()) {
	f, ok := a.errOut.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
			if bar == nil {
				if total <= 0 {
					total = -1
				}
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(what),
					progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
			}
			_ = bar.Set64(done)
		}, func() {
			if bar != nil {
				_ = bar.Finish()
			}
		}
}

func sessionsListCmd(a *app) *cobra.Command {
	var opt repo.RichOptions
	var noProject bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List sessions with a preview, newest first (delegate runs and compression continuations hidden)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			opt.NoProjectCompressionTips = noProject
			rows, err := st.Listing().Rich(cmd.Context(), opt)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(rows)
			}
			tw := tabwriter.NewWriter(a.out, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSOURCE\tLAST ACTIVE\tMSGS\tTITLE / PREVIEW")
			for _, s := range rows {
				label := deref(s.Title)
				if label == "" {
					label = s.Preview
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.ID, s.Source, time.Unix(int64(s.LastActive), 0).Local().Format(time.DateTime), s.MessageCount, label)
			}
			return tw.Flush()
		},
	}
	fl := c.Flags()
	fl.StringVar(&opt.Source, "source", "", "only sessions of this source")
	fl.StringSliceVar(&opt.ExcludeSources, "exclude-source", nil, "leave out sessions of these sources")
	fl.IntVar(&opt.Limit, "limit", 20, "number of sessions")
	fl.IntVar(&opt.Offset, "offset", 0, "sessions to skip")
	fl.BoolVar(&opt.IncludeChildren, "children", false, "also list delegate runs and compression continuations")
	fl.BoolVar(&opt.OrderByLastActive, "by-activity", false, "order by last activity of the whole conversation")
	fl.BoolVar(&opt.IncludeArchived, "archived", false, "include archived sessions")
	fl.BoolVar(&opt.IncludeHidden, "hidden", false, "include hidden sessions")
	fl.BoolVar(&noProject, "no-tips", false, "show compression roots as themselves, not projected onto their live tip")
	return c
}

func sessionsExtraCmds(a *app) []*cobra.Command {
	title := &cobra.Command{
		Use:   "title ID [TITLE]",
		Short: "Set (or with an empty TITLE clear) a session's title; without TITLE print it",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			open := a.openRead
			if len(args) == 2 {
				open = a.open
			}
			st, err := open(cmd.Context())
			if err != nil {
				return err
			}
			id, err := st.Lineage().ResolveID(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if len(args) == 2 {
				if _, err := st.Titles().Set(cmd.Context(), id, args[1]); err != nil {
					return err
				}
			}
			t, err := st.Titles().Get(cmd.Context(), id)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"id": id, "title": nilIfEmpty(t)})
			}
			fmt.Fprintln(a.out, t)
			return nil
		},
	}
	lineage := &cobra.Command{
		Use:   "lineage ID",
		Short: "Show a session's ancestors, descendants and compression chain",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			ctx, lin := cmd.Context(), st.Lineage()
			id, err := lin.ResolveID(ctx, args[0])
			if err != nil {
				return err
			}
			anc, err := lin.Ancestors(ctx, id)
			if err != nil {
				return err
			}
			des, err := lin.Descendants(ctx, id)
			if err != nil {
				return err
			}
			chain, err := lin.CompressionChain(ctx, id)
			if err != nil {
				return err
			}
			tip, err := lin.CompressionTip(ctx, id)
			if err != nil {
				return err
			}
			out := map[string]any{"id": id, "ancestors": anc, "descendants": des, "compression_chain": chain, "compression_tip": tip}
			if a.jsonOut {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.out, "session:      %s\nancestors:    %s\ndescendants:  %s\ncompression:  %s\nlive tip:     %s\n",
				id, strings.Join(anc, " <- "), strings.Join(des, ", "), strings.Join(chain, " -> "), tip)
			return nil
		},
	}
	return []*cobra.Command{title, lineage}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func statsCmd(a *app) *cobra.Command {
	var f repo.StatsFilter
	var top int
	c := &cobra.Command{
		Use:   "stats",
		Short: "Usage statistics: by source, by model, top sessions by tokens",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			ctx, us := cmd.Context(), st.Usage()
			bs, err := us.BySource(ctx, f)
			if err != nil {
				return err
			}
			bm, err := us.ByModel(ctx, f)
			if err != nil {
				return err
			}
			ts, err := us.TopSessions(ctx, top, f)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"by_source": bs, "by_model": bm, "top_sessions": ts})
			}
			tw := tabwriter.NewWriter(a.out, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "SOURCE\tSESSIONS\tMESSAGES\tTOKENS IN\tTOKENS OUT\tCOST USD")
			for _, x := range bs {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.4f\n", x.Source, x.Sessions, x.Messages, x.InputTokens, x.OutputTokens, x.EstimatedCostUSD)
			}
			fmt.Fprintln(tw, "\nMODEL\tSESSIONS\tCALLS\tTOKENS IN\tTOKENS OUT\tCOST USD")
			for _, x := range bm {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.4f\n", x.Model, x.Sessions, x.APICalls, x.InputTokens, x.OutputTokens, x.EstimatedCostUSD)
			}
			fmt.Fprintln(tw, "\nTOP SESSION\tSOURCE\tMESSAGES\tTOKENS\tTITLE")
			for _, x := range ts {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", x.ID, x.Source, x.Messages, x.TotalTokens, deref(x.Title))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&f.Source, "source", "", "only sessions of this source")
	c.Flags().IntVar(&top, "top", 10, "number of top sessions")
	return c
}

func exportCmd(a *app) *cobra.Command {
	var f repo.ExportFilter
	var format, outPath string
	var ids []string
	c := &cobra.Command{
		Use:   "export",
		Short: "Export sessions with their messages as JSONL (default, to stdout) or Markdown",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			if format != "jsonl" && format != "json" && format != "md" && format != "markdown" {
				return fmt.Errorf("unknown --format %q (jsonl or md) (%w)", format, hs.ErrInvalid)
			}
			var w io.Writer = a.out
			var out *outFile
			if outPath != "" && outPath != "-" {
				out, err = newOutFile(outPath)
				if err != nil {
					return err
				}
				defer out.abort()
				w = out
			}
			p, done := a.progress("export")
			defer done()
			switch format {
			case "jsonl", "json":
				_, err = st.Portability().WriteJSONL(cmd.Context(), w, f, ids, p)
			default:
				_, err = st.Portability().WriteMarkdown(cmd.Context(), w, f, ids, p)
			}
			if err == nil && out != nil {
				err = out.commit()
			}
			return err
		},
	}
	c.Flags().StringVar(&format, "format", "jsonl", "jsonl or md")
	c.Flags().StringSliceVar(&ids, "session", nil, "export only this session (repeatable)")
	c.Flags().StringVar(&f.Source, "source", "", "only sessions of this source")
	c.Flags().StringVarP(&outPath, "output", "o", "", "write to this new file instead of stdout (given its name only when complete; never overwritten)")
	return c
}

func importCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE",
		Short: "Import a JSONL export (existing session ids are skipped; missing parents detached)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			// An import into a store that does not exist yet creates it;
			// when the import fails, the new store goes too.
			newFile := ""
			if cfg := a.config(); !hs.IsPostgresDSN(a.dbPath) {
				path := cfg.Path
				if path == "" {
					path = hs.DefaultPath()
				}
				if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) {
					newFile = path
				}
			}
			defer func() {
				if err != nil && newFile != "" {
					a.close()
					for _, p := range []string{newFile, newFile + "-wal", newFile + "-shm", newFile + "-journal"} {
						_ = os.Remove(p)
					}
				}
			}()
			st, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			var r io.Reader = os.Stdin
			if args[0] != "-" {
				file, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer file.Close()
				r = file
			}
			p, done := a.progress("import")
			res, err := st.Portability().Import(cmd.Context(), bufio.NewReader(r), p)
			done()
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.out, "imported %d sessions (%d messages), skipped %d existing, detached %d\n", res.Sessions, res.Messages, res.Skipped, res.Detached)
			return nil
		},
	}
}

func pruneCmd(a *app) *cobra.Command {
	var days float64
	var opt repo.PruneOptions
	var vacuum bool
	c := &cobra.Command{
		Use:   "prune",
		Short: "Delete ended sessions inactive for N days (pinned chats and live compression chains kept)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days < 0 {
				return fmt.Errorf("--older-than-days must not be negative")
			}
			st, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			opt.OlderThan = time.Duration(days * float64(24*time.Hour))
			p, done := a.progress("prune")
			opt.Progress = p
			res, err := st.Cleanup().Prune(cmd.Context(), opt)
			done()
			if err != nil {
				return err
			}
			var vr *repo.VacuumResult
			if vacuum && !opt.DryRun && res.Deleted > 0 {
				v, err := st.Cleanup().Vacuum(cmd.Context(), false)
				if err != nil {
					return err
				}
				vr = &v
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"prune": res, "vacuum": vr})
			}
			verb := "deleted"
			if opt.DryRun {
				verb = "would delete"
			}
			fmt.Fprintf(a.out, "%s %d sessions\n", verb, len(res.IDs))
			if vr != nil && vr.Ran {
				fmt.Fprintf(a.out, "vacuumed (%.0f%% of the file was free)\n", vr.FreeRatio*100)
			}
			return nil
		},
	}
	c.Flags().Float64Var(&days, "older-than-days", 90, "inactivity threshold in days")
	c.Flags().StringVar(&opt.Source, "source", "", "only sessions of this source")
	c.Flags().BoolVar(&opt.DryRun, "dry-run", false, "list what would be deleted")
	c.Flags().BoolVar(&vacuum, "vacuum", true, "VACUUM afterwards when more than a quarter of the file is free")
	return c
}

func deleteCmd(a *app) *cobra.Command {
	var clear bool
	c := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a session with its messages and delegate runs (other children are kept, detached)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			id, err := st.Lineage().ResolveID(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if clear {
				n, err := st.Cleanup().ClearMessages(cmd.Context(), id)
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(map[string]any{"id": id, "messages_deleted": n})
				}
				fmt.Fprintf(a.out, "cleared %d messages of %s\n", n, id)
				return nil
			}
			ids, err := st.Cleanup().Delete(cmd.Context(), id)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"deleted": ids})
			}
			fmt.Fprintf(a.out, "deleted %s\n", strings.Join(ids, ", "))
			return nil
		},
	}
	c.Flags().BoolVar(&clear, "messages-only", false, "keep the session, delete its messages and usage")
	return c
}

func backupCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the database to a new file (VACUUM INTO)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			if err := st.Cleanup().Backup(cmd.Context(), args[0]); err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"backup": args[0]})
			}
			fmt.Fprintf(a.out, "backup written to %s\n", args[0])
			return nil
		},
	}
}

// outFile is a new output file written under a private temporary name in
// its directory and given its name only when complete (commit): a failed or
// killed export leaves no partial file, and an existing file is never
// overwritten.
type outFile struct {
	*os.File
	tmp, path string
	done      bool
}

// outTempPrefix starts the name of an output file being written.
const outTempPrefix = ".hermes-state-out-"

func newOutFile(path string) (*outFile, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s already exists; choose a new file (%w)", path, hs.ErrConflict)
	}
	dir := filepath.Dir(path)
	safefile.RemoveStale(dir, outTempPrefix)
	tmp, err := safefile.CreateTemp(dir, outTempPrefix)
	if err != nil {
		return nil, fmt.Errorf("cannot write in %s: %s (%w)", dir, sqlitex.Describe(err), hs.ErrStorage)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY, 0)
	if err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	return &outFile{File: f, tmp: tmp, path: path}, nil
}

// commit closes the file and gives it its name.
func (o *outFile) commit() error {
	if err := o.File.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %s (%w)", o.path, sqlitex.Describe(err), hs.ErrStorage)
	}
	if err := safefile.Publish(o.tmp, o.path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s appeared meanwhile; not overwritten (%w)", o.path, hs.ErrConflict)
		}
		return fmt.Errorf("cannot name %s: %s (%w)", o.path, sqlitex.Describe(err), hs.ErrStorage)
	}
	o.done = true
	return nil
}

// abort removes the temporary file unless commit succeeded.
func (o *outFile) abort() {
	if !o.done {
		_ = o.File.Close()
		_ = os.Remove(o.tmp)
	}
}
