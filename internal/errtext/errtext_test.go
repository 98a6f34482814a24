package errtext_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
)

func TestMessage(t *testing.T) {
	cause := errors.New("disk I/O error")
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), "plain"},
		{errs.Errorf(errs.ErrNotFound, "lineage.resolve_id", "no session id starts with %q", "x"), `no session id starts with "x"`},
		{errs.Wrap(errs.ErrStorage, "sessions.create", cause, ""), "storage error: disk I/O error"},
		{fmt.Errorf("import line 3: %w", errs.Errorf(errs.ErrInvalid, "portability.import", "bad role")), "import line 3: bad role"},
		{errs.Wrap(errs.ErrBusy, "x.y", errs.Errorf(errs.ErrBusy, "a.b", "locked"), ""), "database busy: locked"},
		{errs.Errorf(errs.ErrInvalid, "op", "first\nsecond"), "first\nsecond"},
	} {
		require.Equal(t, c.want, errtext.Message(c.err))
	}
	require.Equal(t, "first", errtext.FirstLine(errs.Errorf(errs.ErrInvalid, "op", "first\nsecond")))
}
