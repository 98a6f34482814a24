package errtext_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/models"
)

func TestMessage(t *testing.T) {
	cause := errors.New("disk I/O error")
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), "plain"},
		{models.Errorf(models.ErrNotFound, "lineage.resolve_id", "no session id starts with %q", "x"), `no session id starts with "x"`},
		{models.Wrap(models.ErrStorage, "sessions.create", cause, ""), "storage error: disk I/O error"},
		{fmt.Errorf("import line 3: %w", models.Errorf(models.ErrInvalid, "portability.import", "bad role")), "import line 3: bad role"},
		{models.Wrap(models.ErrBusy, "x.y", models.Errorf(models.ErrBusy, "a.b", "locked"), ""), "database busy: locked"},
		{models.Errorf(models.ErrInvalid, "op", "first\nsecond"), "first\nsecond"},
	} {
		require.Equal(t, c.want, errtext.Message(c.err))
	}
	require.Equal(t, "first", errtext.FirstLine(models.Errorf(models.ErrInvalid, "op", "first\nsecond")))
}
