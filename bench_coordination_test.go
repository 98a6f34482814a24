package hermesstate_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/repo"
)

// BenchmarkLeaseAcquireRelease: one turn-lease acquisition and its release
// (two write transactions), uncontended, on a SQLite file (the engine of
// HERMES_STATE_ENGINE) and on PostgreSQL when HERMESSTATE_PG_DSN is set;
// p50 and p99 of the pair are reported beside the mean.
func BenchmarkLeaseAcquireRelease(b *testing.B) {
	for _, be := range hermesstatetest.Backends {
		b.Run(string(be), func(b *testing.B) {
			var st *hs.Store
			if be == hermesstatetest.SQLite {
				st = hermesstatetest.Open(b, be, hs.Config{Path: filepath.Join(b.TempDir(), "state.db")})
			} else {
				st = hermesstatetest.Open(b, be, hs.Config{})
			}
			benchLeasePair(b, st)
		})
	}
}

func benchLeasePair(b *testing.B, st *hs.Store) {
	ctx := context.Background()
	if _, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "bench", Source: "cli"}); err != nil {
		b.Fatal(err)
	}
	tl := st.TurnLeases()
	opt := repo.LeaseOptions{TTL: time.Minute}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		ok, err := tl.TryAcquire(ctx, "bench", "holder", opt)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if ok, err := tl.Release(ctx, "bench", "holder"); err != nil || !ok {
			b.Fatal(ok, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
