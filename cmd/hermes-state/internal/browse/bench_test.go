package browse

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
)

// store200k returns a store of 2,000 sessions x 100 messages (200,000
// messages, FTS triggers active), built once through the public API and
// cached as $TMPDIR/hermesstate-browse-200k.db (delete it to rebuild).
func store200k(b *testing.B) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), "hermesstate-browse-200k.db")
	if fileExists(path) {
		return path
	}
	tmp := path + ".building"
	for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
		_ = os.Remove(p)
	}
	start := time.Now()
	st, err := hs.Open(context.Background(), hs.Config{Path: tmp})
	require.NoError(b, err)
	rng := rand.New(rand.NewSource(200))
	sources := []string{"cli", "telegram", "discord", "cron"}
	for s := 0; s < 2000; s++ {
		id := fmt.Sprintf("bench_%04d", s)
		fillSession(b, st, id, sources[s%len(sources)], 100, 1767225600+float64(s)*1000, rng)
		if s%2 == 0 {
			_, err := st.Titles().Set(context.Background(), id, fmt.Sprintf("Session %d about %s", s, words[s%len(words)]))
			require.NoError(b, err)
		}
	}
	require.NoError(b, st.Close())
	require.NoError(b, os.Rename(tmp, path))
	b.Logf("built %s in %s", path, time.Since(start).Round(time.Second))
	return path
}

// BenchmarkStartup200k measures what stands between `hermes-state browse`
// and its first paint on a 200k-message store: a read-only Open, the
// model's Init with its store calls (the listing that paints, the sources,
// the title check), the window size, and the first View. It does not
// include process start and terminal set-up; --startup-time measures the
// whole (BENCHMARKS.md).
func BenchmarkStartup200k(b *testing.B) {
	path := store200k(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := hs.Open(ctx, hs.Config{Path: path, ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		d := &driver{t: b, m: New(ctx, Options{Store: st, TimeZone: time.UTC})}
		d.send(tea.WindowSizeMsg{Width: 120, Height: 40})
		d.run(d.m.Init())
		if !strings.Contains(d.screen(), "bench_") && !strings.Contains(d.screen(), "Session ") {
			b.Fatalf("no sessions painted:\n%s", d.screen())
		}
		b.StopTimer()
		_ = st.Close()
		b.StartTimer()
	}
}
