package hermesstate_test

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var benchFiles sync.Map // path → *sync.Once

// cachedBenchFile returns path after making sure a benchmark store exists
// there: when the file is missing, build writes it at a temporary path
// (given to it), which is then renamed into place, so an interrupted build
// never leaves a half-filled cache. Each path is built at most once per
// process; delete the file to rebuild it.
func cachedBenchFile(b *testing.B, path string, build func(tmp string)) string {
	b.Helper()
	o, _ := benchFiles.LoadOrStore(path, &sync.Once{})
	o.(*sync.Once).Do(func() {
		if _, err := os.Stat(path); err == nil {
			return
		}
		tmp := path + ".building"
		for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
			_ = os.Remove(p)
		}
		build(tmp)
		require.NoError(b, os.Rename(tmp, path))
		_ = os.Remove(tmp + "-wal")
		_ = os.Remove(tmp + "-shm")
	})
	return path
}
