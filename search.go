package hermesstate

import "github.com/hermesstate/hermesstate/repo"

// Search returns the full-text search repository (Hermes' search_messages,
// FTS rebuild and integrity check).
func (s *Store) Search() repo.Search {
	s.searchOnce.Do(func() { s.search = repo.NewSearch(s.db) })
	return s.search
}
