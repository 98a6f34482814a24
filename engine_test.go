package hermesstate_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestOpenEngineChoice: Config.Engine picks the engine where it is
// compiled in; "c" in a build without it is ErrUnsupported naming the
// build command, before any file is made; an unknown name is ErrInvalid;
// HERMES_STATE_ENGINE is the choice when Config.Engine is empty.
func TestOpenEngineChoice(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{hs.EngineGo, hs.EngineC} {
		path := filepath.Join(dir, name+".db")
		st, err := hs.Open(ctx, hs.Config{Path: path, Engine: name})
		if !slices.Contains(hs.Engines(), name) {
			require.ErrorIs(t, err, hs.ErrUnsupported)
			require.Contains(t, err.Error(), hs.EngineBuildCommand)
			require.NoFileExists(t, path)
			require.ErrorIs(t, hs.Config{Path: path, Engine: name}.Validate(), hs.ErrUnsupported)
			continue
		}
		require.NoError(t, err, name)
		require.Equal(t, name, st.SQLiteEngine())
		require.Contains(t, st.Engine(), "("+name+" engine)")
		require.NoError(t, st.Close())
	}
	_, err := hs.Open(ctx, hs.Config{Path: filepath.Join(dir, "x.db"), Engine: "sqlite3"})
	require.ErrorIs(t, err, hs.ErrInvalid)
	require.NoFileExists(t, filepath.Join(dir, "x.db"))

	t.Setenv(hs.EngineEnv, hs.EngineGo)
	st, err := hs.Open(ctx, hs.Config{Path: filepath.Join(dir, "env.db")})
	require.NoError(t, err)
	require.Equal(t, hs.EngineGo, st.SQLiteEngine())
	require.NoError(t, st.Close())
	t.Setenv(hs.EngineEnv, "fast")
	_, err = hs.Open(ctx, hs.Config{Path: filepath.Join(dir, "env.db")})
	require.ErrorIs(t, err, hs.ErrInvalid)
	require.Contains(t, err.Error(), hs.EngineEnv)
	t.Setenv(hs.EngineEnv, "")
	st, err = hs.Open(ctx, hs.Config{Path: filepath.Join(dir, "env.db")})
	require.NoError(t, err)
	require.Equal(t, hs.DefaultEngine(), st.SQLiteEngine())
	require.NoError(t, st.Close())
}

// TestEnginesShareFiles: a file written by each engine in turn (a store of
// one closed before the other opens it) holds every write, reads back the
// same on both, searches the same and passes doctor on both.
func TestEnginesShareFiles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	var sid string
	for i, name := range append(hs.Engines(), hs.Engines()...) {
		st, err := hs.Open(ctx, hs.Config{Path: path, Engine: name})
		require.NoError(t, err, name)
		if sid == "" {
			s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
			require.NoError(t, err)
			sid = s.ID
		}
		_, err = st.Messages().Append(ctx, sid, repo.MessageInput{Role: "user", Content: models.Text("written by the " + name + " engine, round " + string(rune('a'+i)) + " 日本語テキスト")})
		require.NoError(t, err)
		msgs, err := st.Messages().List(ctx, sid)
		require.NoError(t, err)
		require.Len(t, msgs, i+1, name)
		res, err := st.Search().Messages(ctx, "engine", repo.SearchOptions{Limit: 50})
		require.NoError(t, err)
		require.Len(t, res, i+1, name)
		res, err = st.Search().Messages(ctx, "本語", repo.SearchOptions{Limit: 50})
		require.NoError(t, err)
		require.Len(t, res, i+1, "%s: CJK", name)
		require.NoError(t, st.Close())
		for _, other := range hs.Engines() {
			rep, err := hs.Doctor(ctx, hs.Config{Path: path, Engine: other}, hs.DoctorOptions{Full: true})
			require.NoError(t, err)
			require.True(t, rep.OK(), "doctor (%s engine) after the %s engine wrote: %v", other, name, rep.Problems())
		}
	}
}
