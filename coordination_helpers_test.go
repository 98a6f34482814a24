package hermesstate_test

import (
	"context"
	"regexp"
	"strconv"
	"time"
)

var (
	errDeadline = context.DeadlineExceeded
	regexpNS    = regexp.MustCompile(`:pidns=\d+`)
)

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

func itoa(n int) string { return strconv.Itoa(n) }
