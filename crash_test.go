package hermesstate_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

const crashHelperEnv = "HERMESSTATE_CRASH_HELPER_DB"

// crashContent is the unique, single-line content of message idx of batch
// seq written by child run.
func crashContent(run, seq, idx int) string {
	return fmt.Sprintf("crash run%d seq%d idx%d tokr%dx%dx%d the pod keeps restarting", run, seq, idx, run, seq, idx)
}

// TestCrashHelperProcess is not a test: it is the child of TestCrashSafety
// (re-executed test binary). It appends to the store in a loop, a single
// message or a 3-message turn, and after each call returns nil writes one
// "ack <id> <run> <seq> <idx>" line per message to stdout, so that what it
// reports was committed before it was reported.
func TestCrashHelperProcess(t *testing.T) {
	path := os.Getenv(crashHelperEnv)
	if path == "" {
		t.Skip("helper process for TestCrashSafety; runs only when re-executed by it")
	}
	run, _ := strconv.Atoi(os.Getenv(crashHelperEnv + "_RUN"))
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{Path: path, BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	sess, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "crash", DisplayName: fmt.Sprintf("crash run %d", run)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "create:", err)
		os.Exit(3)
	}
	out := os.Stdout
	for seq := 0; ; seq++ {
		if seq%3 == 2 {
			calls := models.MustJSON([]models.ToolCall{{ID: fmt.Sprintf("c%d", seq), Type: "function",
				Function: models.ToolCallFunction{Name: "terminal", Arguments: `{"command": "kubectl get pods"}`}}})
			turn := []repo.MessageInput{
				{Role: "assistant", Content: models.Text(crashContent(run, seq, 0)), ToolCalls: calls},
				{Role: "tool", ToolName: "terminal", ToolCallID: fmt.Sprintf("c%d", seq), Content: models.Text(crashContent(run, seq, 1))},
				{Role: "assistant", Content: models.Text(crashContent(run, seq, 2) + " " + strings.Repeat("detail ", 200))},
			}
			ids, err := st.Messages().AppendBatch(ctx, sess.ID, turn)
			if err != nil {
				fmt.Fprintln(os.Stderr, "append batch:", err)
				os.Exit(4)
			}
			var b strings.Builder
			for i, id := range ids {
				fmt.Fprintf(&b, "ack %d %d %d %d\n", id, run, seq, i)
			}
			_, _ = out.WriteString(b.String())
			continue
		}
		id, err := st.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text(crashContent(run, seq, 0))})
		if err != nil {
			fmt.Fprintln(os.Stderr, "append:", err)
			os.Exit(4)
		}
		fmt.Fprintf(out, "ack %d %d %d 0\n", id, run, seq)
	}
}

type crashAck struct {
	id            int64
	run, seq, idx int
}

// TestCrashSafety SIGKILLs a child that appends in a loop at random
// moments, 20 times or more on one file (until 6 kills landed mid-append). After every kill the file must pass
// PRAGMA integrity_check and every FTS table's 'integrity-check', every
// message the child acknowledged must be there with its content, every
// session's message_count must equal its rows, and the last acknowledged
// message must be found by search.
func TestCrashSafety(t *testing.T) {
	if os.Getenv(crashHelperEnv) != "" {
		t.Skip("inside the helper")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	// Create and migrate the file first, so kills land in appends more
	// often than in the first migration (later children still open and
	// check the schema, and may be killed doing so).
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	var all []crashAck
	killedWhileWriting, runs := 0, 0
	// At least 20 kills, and on until 6 of them landed while the child was
	// appending: on a loaded machine a child takes longer to start, so the
	// pause before a kill grows whenever one found the child still opening.
	base := 30 * time.Millisecond
	for run := 0; run < 80 && (run < 20 || killedWhileWriting < 6); run++ {
		runs++
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+path, crashHelperEnv+"_RUN="+strconv.Itoa(run))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		acks := make(chan crashAck, 1<<16)
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var a crashAck
				if _, err := fmt.Sscanf(sc.Text(), "ack %d %d %d %d", &a.id, &a.run, &a.seq, &a.idx); err == nil {
					acks <- a
				}
			}
		}()
		// Kill at a random moment: sometimes while the child is still
		// opening the file, mostly in the middle of its appends.
		pause := base + time.Duration(rand.IntN(400))*time.Millisecond
		if run%5 == 0 {
			pause = time.Duration(1+rand.IntN(60)) * time.Millisecond
		}
		time.Sleep(pause)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		<-readDone
		err = cmd.Wait()
		require.Error(t, err, "the child was killed")
		require.NotContains(t, stderr.String(), "append", "the child's writes failed before the kill: %s", stderr.String())
		close(acks)
		n := 0
		for a := range acks {
			all = append(all, a)
			n++
		}
		if n > 0 {
			killedWhileWriting++
		} else if run%5 != 0 {
			base = min(2*base, 5*time.Second)
		}
		crashCheck(t, path, all)
	}
	t.Logf("%d kills, %d while writing, %d acknowledged messages all present", runs, killedWhileWriting, len(all))
	require.GreaterOrEqual(t, killedWhileWriting, 6, "kills that landed while the child was appending")
}

func crashCheck(t *testing.T, path string, acks []crashAck) {
	t.Helper()
	ctx := context.Background()
	raw := concRaw(t, path)
	defer raw.Close()
	var ok string
	require.NoError(t, raw.QueryRow("PRAGMA integrity_check").Scan(&ok))
	require.Equal(t, "ok", ok)
	rows, err := raw.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND lower(sql) LIKE 'create virtual table%using fts5%'`)
	require.NoError(t, err)
	var fts []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		fts = append(fts, n)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	for _, n := range fts {
		q := `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
		_, err := raw.Exec(`INSERT INTO ` + q + `(` + q + `) VALUES ('integrity-check')`)
		require.NoError(t, err, "FTS table %s after a kill", n)
	}
	for _, a := range acks {
		var content string
		err := raw.QueryRow(`SELECT content FROM messages WHERE id = ?`, a.id).Scan(&content)
		require.NoError(t, err, "acknowledged message %d (run %d seq %d) is missing", a.id, a.run, a.seq)
		require.True(t, strings.HasPrefix(content, crashContent(a.run, a.seq, a.idx)), "message %d holds %q", a.id, content)
	}
	var bad int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM sessions s WHERE s.message_count != (SELECT count(*) FROM messages m WHERE m.session_id = s.id)`).Scan(&bad))
	require.Zero(t, bad, "message_count equals rows in every session")
	require.NoError(t, raw.Close())

	// The store opens the crashed file, its own FTS check passes, and the
	// last acknowledged message is found by search.
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer st.Close()
	checks, err := st.Search().Check(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, checks)
	for _, c := range checks {
		require.True(t, c.OK, "%s: %s", c.Table, c.Detail)
	}
	if len(acks) > 0 {
		last := acks[len(acks)-1]
		tok := fmt.Sprintf("tokr%dx%dx%d", last.run, last.seq, last.idx)
		hits, err := st.Search().Messages(ctx, tok, repo.SearchOptions{Limit: 5})
		require.NoError(t, err)
		require.Len(t, hits, 1, "search finds the last acknowledged message %d", last.id)
		require.Equal(t, last.id, hits[0].ID)
	}
	require.NoError(t, st.Close())
}
