package hermesstate_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestOpenersRefuseNonRegularFiles (issue 28, item 1): every opener of a
// store, and every writer of a new file, refuses a path that is not a
// regular file (a loop block device, a character device, a FIFO, a socket,
// a directory) with ErrInvalid wrapping ErrNotRegularFile and a message
// naming the path, before SQLite sees it: the device keeps its zeroes and
// nothing (-wal, -shm, -journal, the write-lock file) appears beside it.
// Before the fix a writable Open of the loop device wrote "SQLite format 3"
// over its first page and left a -shm beside it, and succeeded.
func TestOpenersRefuseNonRegularFiles(t *testing.T) {
	ctx := context.Background()
	src, srcPath := hermesstatetest.FreshPath(t)
	_ = src
	openers := []struct {
		name string
		run  func(path string) error
	}{
		{"Open", func(p string) error { return openClose(ctx, hs.Config{Path: p}) }},
		{"Open journal delete", func(p string) error { return openClose(ctx, hs.Config{Path: p, JournalMode: hs.JournalDelete}) }},
		{"Open MustExist", func(p string) error { return openClose(ctx, hs.Config{Path: p, MustExist: true}) }},
		{"Open ReadOnly", func(p string) error { return openClose(ctx, hs.Config{Path: p, ReadOnly: true}) }},
		{"OpenSnapshot", func(p string) error {
			st, cleanup, err := hs.OpenSnapshot(ctx, p, hs.Config{})
			if err == nil {
				_ = st
				cleanup()
			}
			return err
		}},
		{"Doctor", func(p string) error {
			_, err := hs.Doctor(ctx, hs.Config{Path: p}, hs.DoctorOptions{Full: true})
			return err
		}},
		{"Repair", func(p string) error { _, err := hs.Repair(ctx, hs.Config{Path: p}, hs.RepairOptions{}); return err }},
		{"CheckFTS", func(p string) error { _, err := hs.CheckFTS(ctx, hs.Config{Path: p}); return err }},
		{"Recover from", func(p string) error {
			_, err := hs.Recover(ctx, hs.RecoverOptions{From: p, To: filepath.Join(t.TempDir(), "new.db")})
			return err
		}},
		{"Recover to", func(p string) error { _, err := hs.Recover(ctx, hs.RecoverOptions{From: srcPath, To: p}); return err }},
		{"Backup to", func(p string) error { return src.Cleanup().Backup(ctx, p) }},
	}
	for _, sp := range fixturetest.NonRegular(t) {
		for _, o := range openers {
			t.Run(sp.Kind+"/"+o.name, func(t *testing.T) {
				err := o.run(sp.Path)
				require.Error(t, err, "%s accepted %s (%s)", o.name, sp.Path, sp.Kind)
				require.Truef(t, errors.Is(err, hs.ErrNotRegularFile), "not ErrNotRegularFile: %v", err)
				require.ErrorIs(t, err, hs.ErrInvalid)
				require.Contains(t, err.Error(), sp.Path)
				require.Contains(t, err.Error(), "not a regular file")
				require.Contains(t, err.Error(), " is a "+sp.Kind+", ")
				sp.Untouched(t)
			})
		}
	}
}

func openClose(ctx context.Context, cfg hs.Config) error {
	st, err := hs.Open(ctx, cfg)
	if err == nil {
		return st.Close()
	}
	return err
}
