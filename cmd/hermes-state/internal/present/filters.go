package present

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

// Filters are the filters every surface offers on listings and searches,
// under the same names: source and exclude_source (lists), role (a list,
// searches only), since and until (times), title (listings only: the text
// of a title or id) and sort (searches: relevance, newest or oldest).
type Filters struct {
	Sources, ExcludeSources, Roles []string
	// Since and Until are epoch seconds, 0 for no bound (Since inclusive,
	// Until exclusive).
	Since, Until float64
	Title        string
	// Sort is "relevance" (or ""), "newest" or "oldest".
	Sort string
}

// Roles a search can be narrowed to.
var Roles = []string{"user", "assistant", "tool", "system"}

// Sorts a search can be ordered by.
var Sorts = []string{"relevance", "newest", "oldest"}

// List splits list arguments: each value may itself be comma-separated;
// items are trimmed, empty ones dropped, nil when nothing is left.
func List(values ...string) []string {
	var out []string
	for _, v := range values {
		for _, it := range strings.Split(v, ",") {
			if it = strings.TrimSpace(it); it != "" {
				out = append(out, it)
			}
		}
	}
	return out
}

// ParseWhen reads a time filter: RFC 3339, a date-time without zone or a
// date (in loc, UTC when nil), or epoch seconds. Empty is 0 (no bound). A
// value it cannot read is an error wrapping hermesstate.ErrInvalid that
// names the filter and the accepted forms.
func ParseWhen(name, v string, loc *time.Location) (float64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 253402300799 {
			return 0, fmt.Errorf("%s must be a time after 1970 and before year 10000 (got %q): %w", name, short(v), hs.ErrInvalid)
		}
		return f, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			if t.Unix() <= 0 {
				return 0, fmt.Errorf("%s must be after 1970 (got %q): %w", name, short(v), hs.ErrInvalid)
			}
			return float64(t.UnixNano()) / 1e9, nil
		}
	}
	return 0, fmt.Errorf("%s must be RFC 3339 (2026-01-05T09:00:00Z), a date (2026-01-05) or epoch seconds (got %q): %w", name, short(v), hs.ErrInvalid)
}

// Check validates the filters: known roles and sort, until after since.
// Errors wrap hermesstate.ErrInvalid.
func (f Filters) Check() error {
	for _, r := range f.Roles {
		if !oneOf(r, Roles) {
			return fmt.Errorf("role must be %s, not %q: %w", strings.Join(Roles, ", "), short(r), hs.ErrInvalid)
		}
	}
	if f.Sort != "" && !oneOf(f.Sort, Sorts) {
		return fmt.Errorf("sort must be %s, not %q: %w", strings.Join(Sorts, ", "), short(f.Sort), hs.ErrInvalid)
	}
	if f.Since > 0 && f.Until > 0 && f.Until <= f.Since {
		return fmt.Errorf("until must be later than since: %w", hs.ErrInvalid)
	}
	return nil
}

// Search returns the search options of the filters for one page.
func (f Filters) Search(limit, offset int) repo.SearchOptions {
	opt := repo.SearchOptions{Sources: f.Sources, ExcludeSources: f.ExcludeSources, Roles: f.Roles,
		Limit: limit, Offset: offset, Since: f.Since, Until: f.Until}
	if f.Sort == "newest" || f.Sort == "oldest" {
		opt.Sort = f.Sort
	}
	return opt
}

// Listing returns the options of the listing by last activity (what
// `sessions list --by-activity` and MCP's list_sessions show) for one page.
func (f Filters) Listing(limit, offset int) repo.RichOptions {
	return repo.RichOptions{Sources: f.Sources, ExcludeSources: f.ExcludeSources, Limit: limit, Offset: offset,
		OrderByLastActive: true, SearchQuery: strings.TrimSpace(f.Title), StartedSince: f.Since, StartedBefore: f.Until}
}

func oneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// short is s cut to 40 characters for a message.
func short(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "..."
	}
	return s
}
