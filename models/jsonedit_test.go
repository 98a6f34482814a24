package models

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSONSetKey(t *testing.T) {
	got, err := JSONSetKey([]byte(`{"max_iterations": 20, "note": "é"}`), "_delegate_from", "p1")
	require.NoError(t, err)
	require.Equal(t, `{"max_iterations": 20, "note": "\u00e9", "_delegate_from": "p1"}`, string(got))
	got, err = JSONSetKey(nil, "_reset_from", "x")
	require.NoError(t, err)
	require.Equal(t, `{"_reset_from": "x"}`, string(got))
	got, err = JSONSetKey([]byte(`{"a": 1, "k": "old", "b": 2}`), "k", "new")
	require.NoError(t, err)
	require.Equal(t, `{"a": 1, "k": "new", "b": 2}`, string(got))
	got, err = JSONSetKey([]byte(`not json`), "k", 1)
	require.NoError(t, err)
	require.Equal(t, `{"k": 1}`, string(got))
}
