package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/safefile"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/internal/termtext"
	"github.com/hermesstate/hermesstate/repo"
)

// Moving data in and out: export, import, backup.

func exportCmd(a *app) *cobra.Command {
	var f repo.ExportFilter
	var sources []string
	var format, outPath string
	var ids []string
	c := &cobra.Command{
		Use:   "export",
		Short: "Export sessions with their messages as JSONL (default, to stdout) or Markdown",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return oneOf(cmd, "format", format, "jsonl", "json", "md", "markdown")
		},
		RunE: a.withStore(reads, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
			f.Sources = splitList(sources)
			ids, err := resolveIDs(cmd.Context(), st, ids)
			if err != nil {
				return err
			}
			var w io.Writer = a.out
			var out *outFile
			if outPath != "" && outPath != "-" {
				var err error
				if out, err = newOutFile(outPath); err != nil {
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
				// Markdown is for people (a terminal, a viewer): control
				// characters and bidi controls of stored text are
				// neutralised (termtext); JSONL keeps the bytes.
				tw := termtext.NewWriter(w)
				if _, err = st.Portability().WriteMarkdown(cmd.Context(), tw, f, ids, p); err == nil {
					err = tw.Flush()
				}
			}
			if err == nil && out != nil {
				err = out.commit()
			}
			return err
		}),
	}
	c.Flags().StringVar(&format, "format", "jsonl", "jsonl or md")
	c.Flags().StringSliceVar(&ids, "session", nil, "export only this session, by its id or a unique prefix (repeatable)")
	sourceFlags(c, &sources, nil)
	c.Flags().StringVarP(&outPath, "output", "o", "", "write to this new file instead of stdout (given its name only when complete; never overwritten)")
	return c
}

// resolveIDs turns each session id or unique prefix of ids into the full
// id (ErrNotFound for one that matches nothing, ErrConflict for an
// ambiguous prefix).
func resolveIDs(ctx context.Context, st *hs.Store, ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		full, err := st.Lineage().ResolveID(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, full)
	}
	return out, nil
}

func importCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE",
		Short: "Import a JSONL export (existing session ids are skipped; missing parents detached; - reads stdin)",
		Long: `Import a JSONL export, one session per line, in ascending message id order
(an export lists the newest session first; imported in that order the new
file would grow by a third). Sessions whose id exists are skipped. A line
the API would refuse is named with its number, session id and reason and
imports nothing; every other line is imported, and the command exits 2.
What the import changes to store what the API would (a title another
session holds gets Hermes' numbered form "X #2"; a parent that is missing,
the session itself or closes a loop is left out; tool_calls that are not
JSON become NULL) is printed line by line and counted in the summary.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			in, closeIn, err := importInput(args[0])
			if err != nil {
				return err
			}
			defer closeIn()
			// An import into a store that does not exist yet creates it;
			// when it imports nothing, the new store goes again.
			var res repo.ImportResult
			if newFile := a.missingStoreFile(); newFile != "" {
				defer func() {
					if err != nil && res.Sessions == 0 {
						a.close()
						for _, p := range []string{newFile, newFile + "-wal", newFile + "-shm", newFile + "-journal"} {
							_ = os.Remove(p)
						}
					}
				}()
			}
			return a.withStore(creates, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
				p, done := a.progress("import")
				var err error
				res, err = st.Portability().Import(cmd.Context(), in, p)
				done()
				if err != nil && len(res.Refused) == 0 {
					return err
				}
				if perr := a.emit(res, func(w io.Writer) error {
					// Line by line: what was changed to store what the
					// API would, and what was refused.
					for _, c := range res.Changes {
						if _, err := fmt.Fprintf(w, "line %d (session %s): changed: %s\n", c.Line, c.Session, c.Change); err != nil {
							return err
						}
					}
					for _, r := range res.Refused {
						if _, err := fmt.Fprintf(w, "refused: %s\n", r.Reason); err != nil {
							return err
						}
					}
					changed := ""
					if n := res.ChangedSessions(); n > 0 {
						changed = fmt.Sprintf(", changed %s (%s above)", plural(n, "session", ""), plural(int64(len(res.Changes)), "change", ""))
					}
					adjusted := ""
					if res.Adjusted > 0 {
						adjusted = fmt.Sprintf(", %s set to what the API stores (out-of-range timestamps, titles)", plural(res.Adjusted, "value", ""))
					}
					refused := ""
					if len(res.Refused) > 0 {
						refused = fmt.Sprintf(", refused %s", plural(int64(len(res.Refused)), "line", ""))
					}
					_, err := fmt.Fprintf(w, "imported %s (%s), skipped %d existing%s, detached %d%s%s\n",
						plural(int64(res.Sessions), "session", ""), plural(int64(res.Messages), "message", ""), res.Skipped, changed, res.Detached, adjusted, refused)
					return err
				}); perr != nil {
					return perr
				}
				return err
			})(cmd, args)
		},
	}
}

// importInput opens the file import reads. Standard input (-) is first
// copied to a private temporary file (removed when done), so that it too
// is imported in ascending id order, which needs two reads.
func importInput(name string) (io.Reader, func(), error) {
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, fileError("cannot read", name, err)
		}
		return f, func() { _ = f.Close() }, nil
	}
	f, err := os.CreateTemp("", "hermes-state-import-*.jsonl")
	if err != nil {
		return nil, nil, fileError("cannot keep standard input in", os.TempDir(), err)
	}
	cleanup := func() { _ = f.Close(); _ = os.Remove(f.Name()) }
	if _, err := io.Copy(f, os.Stdin); err != nil {
		cleanup()
		return nil, nil, fileError("cannot keep standard input in", os.TempDir(), err)
	}
	return f, cleanup, nil
}

// missingStoreFile is the SQLite file --db names when it does not exist
// yet ("" for PostgreSQL or an existing file).
func (a *app) missingStoreFile() string {
	if hs.IsPostgresDSN(a.dbPath) {
		return ""
	}
	path := a.config().Path
	if path == "" {
		path = hs.DefaultPath()
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return path
	}
	return ""
}

// fileError says what could not be done with a file the user named, the
// path and the cause in words (exit 3 when it does not exist).
func fileError(what, path string, err error) error {
	kind := hs.ErrStorage
	if errors.Is(err, fs.ErrNotExist) {
		kind = hs.ErrNotFound
	}
	return &hs.Error{Kind: kind, Msg: fmt.Sprintf("%s %s: %s", what, path, sqlitex.Describe(err)), Err: err}
}

func backupCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the database to a new file (VACUUM INTO; never overwrites)",
		Args:  cobra.ExactArgs(1),
		RunE: a.withStore(reads, func(cmd *cobra.Command, st *hs.Store, args []string) error {
			if err := st.Cleanup().Backup(cmd.Context(), args[0]); err != nil {
				return err
			}
			return a.emit(map[string]any{"backup": args[0]}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "backup written to %s\n", args[0])
				return err
			})
		}),
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

// newOutFile starts a new output file at path; an existing path is a
// conflict (said as backup says it).
func newOutFile(path string) (*outFile, error) {
	if err := sqlitex.CheckRegular("export", path); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, failf(hs.ErrConflict, "%s already exists; choose a new file", path)
	}
	dir := filepath.Dir(path)
	safefile.RemoveStale(dir, outTempPrefix)
	tmp, err := safefile.CreateTemp(dir, outTempPrefix)
	if err != nil {
		return nil, fileError("cannot write in", dir, err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY, 0)
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fileError("cannot write", tmp, err)
	}
	return &outFile{File: f, tmp: tmp, path: path}, nil
}

// commit closes the file and gives it its name.
func (o *outFile) commit() error {
	if err := o.File.Close(); err != nil {
		return fileError("cannot write", o.path, err)
	}
	if err := safefile.Publish(o.tmp, o.path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return failf(hs.ErrConflict, "%s appeared meanwhile; not overwritten", o.path)
		}
		return fileError("cannot name", o.path, err)
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
