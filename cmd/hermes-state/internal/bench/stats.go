package bench

import (
	"math"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
)

func round1(f float64) float64 { return math.Round(f*10) / 10 }
func round2(f float64) float64 { return math.Round(f*100) / 100 }
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// pctl is bench_hermes.py's nearest-rank percentile of a non-empty sorted
// slice (q in 0..100), with Python's round-half-to-even.
func pctl(sorted []float64, q float64) float64 {
	n := len(sorted)
	k := int(math.RoundToEven(q/100*float64(n)+0.5)) - 1
	k = max(0, min(n-1, k))
	return sorted[k]
}

// median is Python's statistics.median.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// MSStats is bench_hermes.py's ms_stats: latency figures in milliseconds.
type MSStats struct {
	N        int     `json:"n"`
	MedianMS float64 `json:"median_ms"`
	P95MS    float64 `json:"p95_ms"`
	P99MS    float64 `json:"p99_ms"`
	MinMS    float64 `json:"min_ms"`
	MaxMS    float64 `json:"max_ms"`
}

func msStats(ds []time.Duration) MSStats {
	if len(ds) == 0 {
		return MSStats{}
	}
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d.Nanoseconds()) / 1e6
	}
	sort.Float64s(ms)
	return MSStats{N: len(ms), MedianMS: round3(median(ms)), P95MS: round3(pctl(ms, 95)), P99MS: round3(pctl(ms, 99)),
		MinMS: round3(ms[0]), MaxMS: round3(ms[len(ms)-1])}
}

// Timing is the per-call figure of the search and listing phases.
type Timing struct {
	MedianMS float64 `json:"median_ms"`
	P95MS    float64 `json:"p95_ms"`
	N        int     `json:"n"`
	// CPUMSPerCall is this process's user+system CPU per timed call
	// (steadier than wall time on a shared machine).
	CPUMSPerCall float64 `json:"cpu_ms_per_call"`

	minMS, maxMS float64
}

// cpuTime is the user+system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSMiB is this process's peak resident set size (Linux: KiB).
func peakRSSMiB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return round1(float64(ru.Maxrss) / 1024)
}

// loadAvg is /proc/loadavg's three load averages ("" elsewhere).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// fileSizes is bench_hermes.py's file_sizes: state.db, -wal and -shm.
func fileSizes(db string) map[string]int64 {
	out := map[string]int64{}
	for _, suf := range []string{"", "-wal", "-shm"} {
		var n int64
		if st, err := os.Stat(db + suf); err == nil {
			n = st.Size()
		}
		out["state.db"+suf] = n
	}
	return out
}

// timeCalls runs fn warmup times, then reps timed times, and returns the
// timing and the last result's error.
func timeCalls(warmup, reps int, fn func() error) (Timing, error) {
	for i := 0; i < warmup; i++ {
		if err := fn(); err != nil {
			return Timing{}, err
		}
	}
	ds := make([]time.Duration, 0, reps)
	c0 := cpuTime()
	for i := 0; i < reps; i++ {
		t := time.Now()
		if err := fn(); err != nil {
			return Timing{}, err
		}
		ds = append(ds, time.Since(t))
	}
	cpu := cpuTime() - c0
	st := msStats(ds)
	return Timing{MedianMS: st.MedianMS, P95MS: st.P95MS, N: st.N, CPUMSPerCall: round3(float64(cpu.Nanoseconds()) / 1e6 / float64(max(1, reps))),
		minMS: st.MinMS, maxMS: st.MaxMS}, nil
}
