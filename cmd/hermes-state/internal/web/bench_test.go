package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/bench"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/web"
	"github.com/hermesstate/hermesstate/repo"
)

// BenchEnv names the store BenchmarkServeFirstByte serves: one built from
// the shared corpus (200k messages), e.g.
//
//	hermes-state bench --phases build --sessions 10000 --per-session 20 --keep --no-raw --workdir /tmp/hsb
//	HERMESSTATE_SERVE_BENCH_STORE=/tmp/hsb/hermesstate-bench-*/run1/store/state.db \
//	  go test ./cmd/hermes-state/internal/web/ -run '^$' -bench ServeFirstByte -benchtime 60x
const BenchEnv = "HERMESSTATE_SERVE_BENCH_STORE"

// BenchmarkServeFirstByte serves the store read-only over real HTTP on
// loopback (as `hermes-state serve` does) and measures, per page, the time
// from sending the request to the response's first byte (httptrace), and
// the whole response; it reports their p50 and p95 in milliseconds. Pages:
// the listing (first page, by source, a deep page), the search page for
// every query of the shared benchmark, and, for comparison, the store
// calls each page makes.
func BenchmarkServeFirstByte(b *testing.B) {
	path := os.Getenv(BenchEnv)
	if path == "" {
		b.Skip("set " + BenchEnv + " to a store built from the shared corpus (see the comment on BenchEnv)")
	}
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{Path: path, ReadOnly: true, MustExist: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv, err := web.New(web.Options{Store: st, Location: path})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	pages := []struct{ name, path string }{
		{"listing", "/"},
		{"listing_source_cli", "/?source=cli"},
		{"listing_offset_5000", "/?offset=5000"},
	}
	for _, q := range bench.Queries {
		pages = append(pages, struct{ name, path string }{"search_" + q.Name, "/search?q=" + url.QueryEscape(q.Q)})
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			for range 3 {
				firstByte(b, ts.URL+p.path)
			}
			var fb, all []float64
			for b.Loop() {
				f, a := firstByte(b, ts.URL+p.path)
				fb, all = append(fb, f), append(all, a)
			}
			report(b, "first_byte", fb)
			report(b, "full", all)
		})
	}

	calls := []struct {
		name string
		fn   func() error
	}{
		{"store_listing_rich", func() error {
			_, err := st.Listing().Rich(ctx, repo.RichOptions{Limit: 51, OrderByLastActive: true})
			return err
		}},
		{"store_by_source", func() error { _, err := st.Usage().BySource(ctx, repo.StatsFilter{}); return err }},
		{"store_search_docker_20", func() error {
			_, err := st.Search().Run(ctx, "docker", repo.SearchOptions{Limit: 20})
			return err
		}},
		{"store_search_docker_220", func() error {
			_, err := st.Search().Run(ctx, "docker", repo.SearchOptions{Limit: 220})
			return err
		}},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			var ms []float64
			for b.Loop() {
				t0 := time.Now()
				if err := c.fn(); err != nil {
					b.Fatal(err)
				}
				ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
			}
			report(b, "call", ms)
		})
	}
}

// firstByte GETs u and returns the milliseconds to the first response byte
// and to the end of the body.
func firstByte(b *testing.B, u string) (float64, float64) {
	var first time.Time
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { first = time.Now() }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, u, nil)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	end := time.Now()
	if res.StatusCode != http.StatusOK {
		b.Fatalf("%s: %s", u, res.Status)
	}
	return float64(first.Sub(t0).Microseconds()) / 1000, float64(end.Sub(t0).Microseconds()) / 1000
}

// report adds the p50 and p95 of ms as metrics NAME_p50_ms, NAME_p95_ms.
func report(b *testing.B, name string, ms []float64) {
	if len(ms) == 0 {
		return
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	at := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	b.ReportMetric(at(0.50), name+"_p50_ms")
	b.ReportMetric(at(0.95), name+"_p95_ms")
	b.ReportMetric(0, "ns/op")
}
