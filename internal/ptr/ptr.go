// Package ptr reads optional values: the *string, *int64 and *float64
// fields that stand for nullable columns.
package ptr

// Deref returns *p, or T's zero value when p is nil.
func Deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
