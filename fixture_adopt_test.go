package hermesstate_test

import (
	"testing"
)

func TestFixturesOpen(t *testing.T) {
	for _, f := range LoadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			f.Open(t)
		})
	}
}
