package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkStress4x2000 runs the stress tool once: 4 OS processes x 2,000
// appends (one transaction each), 100 ms busy timeout, a search every 10
// appends. It reports the throughput of all processes together and the
// append latency percentiles (max = the longest stall a caller saw).
func BenchmarkStress4x2000(b *testing.B) {
	if b.N > 1 {
		b.Skip("one run is the measurement")
	}
	a := &app{out: &bytes.Buffer{}, errOut: &bytes.Buffer{}, dbPath: filepath.Join(b.TempDir(), "state.db")}
	rep, err := runStress(context.Background(), a, stressOpts{procs: 4, appends: 2000, busy: 100 * time.Millisecond, readEvery: 10})
	if err != nil {
		b.Fatal(err)
	}
	if rep.Lost+rep.Duplicates+rep.ErrorsTotal+rep.SearchMisses > 0 || !rep.CountersConsistent {
		b.Fatalf("stress failed: %+v", rep)
	}
	b.ReportMetric(rep.ThroughputPerS, "appends/s")
	b.ReportMetric(rep.LatencyMS.P50, "p50-ms")
	b.ReportMetric(rep.LatencyMS.P99, "p99-ms")
	b.ReportMetric(rep.LatencyMS.Max, "max-ms")
	b.ReportMetric(rep.ReadLatencyMS.P99, "search-p99-ms")
}
