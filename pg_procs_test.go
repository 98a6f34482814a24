package hermesstate_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

const pgProcEnv = "HERMESSTATE_PG_PROC_SCHEMA"

// TestPostgresProcHelper is one writer process of
// TestPostgresFourProcessesAppend (it does nothing when run directly).
func TestPostgresProcHelper(t *testing.T) {
	schema := os.Getenv(pgProcEnv)
	if schema == "" {
		t.Skip("helper process of TestPostgresFourProcessesAppend")
	}
	w, _ := strconv.Atoi(os.Getenv(pgProcEnv + "_WORKER"))
	n, _ := strconv.Atoi(os.Getenv(pgProcEnv + "_N"))
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{DSN: os.Getenv(pgtest.EnvDSN), Schema: schema, MaxOpenConns: 2})
	require.NoError(t, err)
	defer st.Close()
	for i := 0; i < n; i++ {
		// Half the appends go to the shared session, half to the worker's own.
		sid := "shared"
		if i%2 == 1 {
			sid = fmt.Sprintf("own-%d", w)
		}
		_, err := st.Messages().Append(ctx, sid, repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprintf("w%d-%d", w, i))})
		require.NoError(t, err)
		if i%10 == 0 || i%10 == 5 {
			require.NoError(t, st.Sessions().UpdateTokenCounts(ctx, sid, repo.TokenUpdate{InputTokens: 1, APICallCount: 1, Model: "m", BillingProvider: "p"}))
		}
	}
}

// TestPostgresFourProcessesAppend: 4 processes × 1,000 appends into one
// PostgreSQL schema (a shared session and one session each): no append is
// lost, ids are unique, counters are exact, each writer's messages keep
// their order.
func TestPostgresFourProcessesAppend(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	const procs, each = 4, 1000
	ctx := fixturetest.Ctx(t)
	st, err := hs.Open(ctx, hs.Config{DSN: dsn, Schema: schema})
	require.NoError(t, err)
	defer st.Close()
	for _, id := range []string{"shared", "own-0", "own-1", "own-2", "own-3"} {
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
		require.NoError(t, err)
	}
	start := time.Now()
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*strings.Builder, procs)
	for w := 0; w < procs; w++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresProcHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), pgProcEnv+"="+schema, fmt.Sprintf("%s_WORKER=%d", pgProcEnv, w), fmt.Sprintf("%s_N=%d", pgProcEnv, each))
		outs[w] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[w], outs[w]
		require.NoError(t, cmd.Start())
		cmds[w] = cmd
	}
	for w, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "worker %d:\n%s", w, outs[w].String())
	}
	t.Logf("%d processes × %d appends in %s", procs, each, time.Since(start).Round(time.Millisecond))
	// The checks get a budget of their own: the workers' wall time (a
	// minute on a loaded 2-core machine) is not theirs to spend.
	ctx = fixturetest.Ctx(t)

	n, err := st.Messages().Count(ctx, "")
	require.NoError(t, err)
	require.EqualValues(t, procs*each, n, "no append lost")
	shared, err := st.Sessions().Get(ctx, "shared")
	require.NoError(t, err)
	require.EqualValues(t, procs*each/2, shared.MessageCount)
	require.EqualValues(t, procs*(each/10), shared.InputTokens)
	require.EqualValues(t, procs*(each/10), shared.APICallCount)
	for w := 0; w < procs; w++ {
		own, err := st.Sessions().Get(ctx, fmt.Sprintf("own-%d", w))
		require.NoError(t, err)
		require.EqualValues(t, each/2, own.MessageCount)
		require.EqualValues(t, each/10, own.InputTokens)
	}
	list, err := st.Messages().List(ctx, "shared")
	require.NoError(t, err)
	require.Len(t, list, procs*each/2)
	last := map[int]int{}
	seen := map[int64]bool{}
	for _, m := range list {
		require.False(t, seen[m.ID])
		seen[m.ID] = true
		var w, i int
		_, err := fmt.Sscanf(*m.Content, "w%d-%d", &w, &i)
		require.NoError(t, err)
		if prev, ok := last[w]; ok {
			require.Greater(t, i, prev, "writer %d's messages in order", w)
		}
		last[w] = i
	}
	usage, err := st.ModelUsage(ctx, "shared")
	require.NoError(t, err)
	require.Len(t, usage, 1)
	require.EqualValues(t, procs*(each/10), usage[0].InputTokens)
}
