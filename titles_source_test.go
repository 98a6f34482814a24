package hermesstate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

func TestTitleSetSource(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
		require.NoError(t, err)
		ok, err := st.Titles().SetSource(ctx, "s", "llm")
		require.NoError(t, err)
		require.False(t, ok, "an untitled session has no provenance")
		_, err = st.Titles().Set(ctx, "s", "Chat")
		require.NoError(t, err)
		ok, err = st.Titles().SetSource(ctx, "s", "llm")
		require.NoError(t, err)
		require.True(t, ok)
		s, err := st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "llm", *s.TitleSource)
		require.Equal(t, "Chat", *s.Title)
		_, err = st.Titles().SetSource(ctx, "s", "robot")
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
	})
}
