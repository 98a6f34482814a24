package models

import (
	"math"
	"time"
)

// Epoch is a point in time stored as REAL Unix epoch seconds with a
// fraction, exactly as Hermes stores it. Keeping the float64 itself (rather
// than a time.Time) means a value read from a Hermes file is written back,
// exported and compared bit for bit. Use Time and EpochOf to convert.
type Epoch float64

// EpochOf converts t to epoch seconds.
func EpochOf(t time.Time) Epoch {
	return Epoch(float64(t.UnixNano()) / 1e9)
}

// Now returns the current time as epoch seconds.
func Now() Epoch { return EpochOf(time.Now()) }

// Time converts e to a time.Time (microsecond precision, UTC location).
func (e Epoch) Time() time.Time {
	f := float64(e)
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}

// Float returns e as float64 seconds.
func (e Epoch) Float() float64 { return float64(e) }

// Sane reports whether e lies in the window Hermes accepts for timestamps:
// after 2000-01-01 and no more than one day in the future.
func (e Epoch) Sane() bool {
	f := float64(e)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return false
	}
	return f >= 946684800 && f <= float64(time.Now().Add(24*time.Hour).Unix())
}

// EpochPtr returns a pointer to e (for nullable columns).
func EpochPtr(e Epoch) *Epoch { return &e }
