package repo

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// MaxTitleLength is the longest title (in characters, after sanitizing)
// Hermes accepts.
const MaxTitleLength = 100

// BotChatTitle is the title of Bot Mode's canonical chat: a hidden session
// with this exact title is resolved by name, so it is never renamed.
const BotChatTitle = "Bot Chat"

// Title provenances (sessions.title_source). Automatic titles only replace
// a strictly lower rank: derived < llm < user (NULL ranks as user; any
// other value as derived).
const (
	TitleDerived        = "derived"
	TitleLLM            = "llm"
	TitleUser           = "user"
	TitleBranch         = "branch"
	TitleBranchFallback = "branch_fallback"
)

// Titles is the repository of session titles.
type Titles interface {
	// Set gives the session a title on the user's behalf (provenance
	// "user"); an empty title (after sanitizing) clears title and
	// title_source. It reports whether the row changed. Errors: ErrInvalid
	// for a title longer than MaxTitleLength, ErrNotFound for a missing
	// session, ErrConflict when another session holds the title (the
	// *errs.Error's ID names it) or when the session is a hidden
	// canonical "Bot Chat". A title held by a compression ancestor moves to
	// this session; one held by an archived hidden "Bot Chat" is retired.
	Set(ctx context.Context, id, title string) (bool, error)
	// SetAuto writes an automatic title with the given provenance (derived,
	// llm, branch, branch_fallback). It reports false, without error, when
	// the session holds a title of equal or higher rank. Errors as Set,
	// plus ErrInvalid for an unknown provenance.
	SetAuto(ctx context.Context, id, title, source string) (bool, error)
	// Get returns the title of a session ("" when untitled) or ErrNotFound.
	Get(ctx context.Context, id string) (string, error)
	// ByTitle returns the session holding exactly this title, or
	// ErrNotFound.
	ByTitle(ctx context.Context, title string) (*models.Session, error)
	// Resolve maps a title to a session id, preferring the newest
	// "<title> #N" continuation over the exact title (except for the
	// canonical "Bot Chat"). ErrNotFound when nothing matches.
	Resolve(ctx context.Context, title string) (string, error)
	// NextInLineage returns the next title of a numbered lineage: base when
	// no "base" or "base #N" title exists, else "base #(max N + 1)" (the
	// bare base counts as #1). A trailing " #N" on the argument is ignored.
	NextInLineage(ctx context.Context, title string) (string, error)
	// Stored returns every non-NULL title, sorted.
	Stored(ctx context.Context) ([]string, error)
	// SetSource overwrites the provenance of a session's title without
	// touching the text (a title carried across a compression rotation keeps
	// the original's authority: Hermes' set_session_title_source) and
	// reports whether a titled session changed. ErrInvalid for a source
	// other than derived, llm or user.
	SetSource(ctx context.Context, id, source string) (bool, error)
}

type titleRepo struct{ db *DB }

// NewTitles returns the GORM implementation of Titles.
func NewTitles(db *DB) Titles { return &titleRepo{db} }

func isTitleControl(r rune) bool {
	return (r >= 0 && r <= 8) || r == 0x0b || r == 0x0c || (r >= 0x0e && r <= 0x1f) || r == 0x7f
}

func isTitleInvisible(r rune) bool {
	return (r >= 0x200b && r <= 0x200f) || (r >= 0x2028 && r <= 0x202e) || (r >= 0x2060 && r <= 0x2069) ||
		r == 0xfeff || r == 0xfffc || (r >= 0xfff9 && r <= 0xfffb)
}

// SanitizeTitle normalizes a title the way Hermes' sanitize_title does:
// invalid UTF-8 becomes U+FFFD, ASCII control characters and zero-width,
// bidi and object-replacement characters are removed, every run of Unicode
// whitespace becomes one space, and the result is trimmed. It returns ""
// for an empty result, and ErrInvalid when the result is longer than
// MaxTitleLength characters.
func SanitizeTitle(title string) (string, error) {
	if title == "" {
		return "", nil
	}
	title = strings.ToValidUTF8(title, "\uFFFD")
	var b strings.Builder
	b.Grow(len(title))
	space := false
	for _, r := range title {
		if isTitleInvisible(r) || isTitleControl(r) {
			continue
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	out := b.String()
	if n := utf8.RuneCountInString(out); n > MaxTitleLength {
		return "", errs.Errorf(errs.ErrInvalid, "titles.sanitize", "title too long (%d chars, max %d)", n, MaxTitleLength)
	}
	return out, nil
}

func titleRank(source *string) int {
	if source == nil {
		return 2
	}
	switch *source {
	case TitleUser:
		return 2
	case TitleLLM:
		return 1
	}
	return 0
}

// EscapeLike escapes the LIKE wildcards (and the escape character) of s,
// for a pattern used with ESCAPE '\'.
func EscapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func (r *titleRepo) Set(ctx context.Context, id, title string) (bool, error) {
	return r.set(ctx, "titles.set", id, title, TitleUser)
}

func (r *titleRepo) SetAuto(ctx context.Context, id, title, source string) (bool, error) {
	const op = "titles.set_auto"
	switch source {
	case TitleDerived, TitleLLM, TitleBranch, TitleBranchFallback:
	default:
		return false, errs.Errorf(errs.ErrInvalid, op, "invalid automatic title source %q", source)
	}
	return r.set(ctx, op, id, title, source)
}

// isCompressionAncestor reports whether ancestor is a compression
// predecessor of descendant (walking parent edges whose parent ended with
// compression).
func isCompressionAncestor(tx *gorm.DB, ancestor, descendant string) (bool, error) {
	if ancestor == "" || descendant == "" || ancestor == descendant {
		return false, nil
	}
	var n []int
	err := tx.Raw(query("titles_compression_ancestor"), descendant, ancestor, descendant).Scan(&n).Error
	return len(n) > 0, err
}

func (r *titleRepo) set(ctx context.Context, op, id, title, source string) (bool, error) {
	if err := checkID(op, id); err != nil {
		return false, err
	}
	clean, err := SanitizeTitle(title)
	if err != nil {
		var me *errs.Error
		if errors.As(err, &me) {
			me.Op = op
		}
		return false, err
	}
	isUser := source == TitleUser
	var changed bool
	err = r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var cur []struct {
			Title       *string
			TitleSource *string
			Hidden      int64
		}
		if err := tx.Model(&models.Session{}).Select("title, title_source, hidden").Where("id = ?", id).Limit(1).Find(&cur).Error; err != nil {
			return err
		}
		if len(cur) == 0 {
			return noSession(op, id)
		}
		c := cur[0]
		if ptr.Deref(c.Title) == BotChatTitle && c.Hidden != 0 && clean != BotChatTitle {
			if isUser {
				return errs.Errorf(errs.ErrConflict, op, "session %q is the bot's canonical Bot Chat; its name is its identity and cannot change", id)
			}
			return nil
		}
		if !isUser && c.Title != nil && titleRank(c.TitleSource) >= titleRank(&source) {
			return nil
		}
		if clean != "" {
			var other []struct {
				ID       string
				Archived int64
				Hidden   int64
			}
			if err := tx.Model(&models.Session{}).Select("id, archived, hidden").Where("title = ? AND id <> ?", clean, id).Limit(1).Find(&other).Error; err != nil {
				return err
			}
			if len(other) == 1 {
				o := other[0]
				anc, err := isCompressionAncestor(tx, o.ID, id)
				if err != nil {
					return err
				}
				switch {
				case anc:
					if err := tx.Model(&models.Session{}).Where("id = ?", o.ID).Update("title", nil).Error; err != nil {
						return err
					}
				case clean == BotChatTitle && o.Archived != 0 && o.Hidden != 0:
					if err := tx.Model(&models.Session{}).Where("id = ?", o.ID).
						Updates(map[string]any{"title": nil, "title_source": nil}).Error; err != nil {
						return err
					}
				default:
					e := errs.Errorf(errs.ErrConflict, op, "title %q is already in use by session %s", clean, o.ID)
					e.ID = o.ID
					return e
				}
			}
		}
		var newTitle, newSource any
		if clean != "" {
			newTitle, newSource = clean, source
		}
		q := tx.Model(&models.Session{}).Where("id = ?", id)
		q = whereIsNullable(q, "title", c.Title)
		q = whereIsNullable(q, "title_source", c.TitleSource)
		res := q.Updates(map[string]any{"title": newTitle, "title_source": newSource})
		if res.Error != nil {
			return res.Error
		}
		changed = res.RowsAffected > 0
		return nil
	})
	return changed, err
}

// whereIsNullable adds "col = v" or "col IS NULL" (a NULL-safe compare).
func whereIsNullable(q *gorm.DB, col string, v *string) *gorm.DB {
	if v == nil {
		return q.Where(col + " IS NULL")
	}
	return q.Where(col+" = ?", *v)
}

func (r *titleRepo) Get(ctx context.Context, id string) (string, error) {
	const op = "titles.get"
	if err := checkID(op, id); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) {
		var rows []struct{ Title *string }
		if err := tx.Model(&models.Session{}).Select("title").Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
			return "", err
		}
		if len(rows) == 0 {
			return "", noSession(op, id)
		}
		return ptr.Deref(rows[0].Title), nil
	})
}

func (r *titleRepo) ByTitle(ctx context.Context, title string) (*models.Session, error) {
	const op = "titles.by_title"
	if err := checkText(op, "title", title); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*models.Session, error) {
		var s []models.Session
		if err := tx.Where("title = ?", title).Limit(1).Find(&s).Error; err != nil {
			return nil, err
		}
		if len(s) == 0 {
			return nil, errs.Errorf(errs.ErrNotFound, op, "no session is titled %q", title)
		}
		s[0].LiftMarkers()
		return &s[0], resolvePrompt(tx, &s[0])
	})
}

func (r *titleRepo) Resolve(ctx context.Context, title string) (string, error) {
	const op = "titles.resolve"
	if err := checkText(op, "title", title); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) {
		var exact []string
		if err := tx.Model(&models.Session{}).Where("title = ?", title).Limit(1).Pluck("id", &exact).Error; err != nil {
			return "", err
		}
		if len(exact) == 1 && title == BotChatTitle {
			return exact[0], nil
		}
		var numbered []string
		if err := tx.Model(&models.Session{}).Where("title "+r.db.likeCI()+" ? ESCAPE '\\'", EscapeLike(title)+" #%").
			Order("started_at DESC").Limit(1).Pluck("id", &numbered).Error; err != nil {
			return "", err
		}
		if len(numbered) == 1 {
			return numbered[0], nil
		}
		if len(exact) == 1 {
			return exact[0], nil
		}
		return "", errs.Errorf(errs.ErrNotFound, op, "no session is titled %q", title)
	})
}

var numberedTitleRE = regexp.MustCompile(`^(.*?) #(\d+)$`)

// SplitNumberedTitle splits "X #N" into ("X", N); a title without a
// number suffix returns (title, 0).
func SplitNumberedTitle(title string) (string, int) {
	m := numberedTitleRE.FindStringSubmatch(title)
	if m == nil {
		return title, 0
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return title, 0
	}
	return m[1], n
}

func (r *titleRepo) NextInLineage(ctx context.Context, title string) (string, error) {
	const op = "titles.next_in_lineage"
	if err := checkText(op, "title", title); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) { return nextTitleIn(tx, r.db, title) })
}

// nextTitleIn is Hermes' get_next_title_in_lineage in tx: the base of
// title (without its " #N") when no session holds it or a numbered form
// of it, else the base numbered one past the highest number in use
// ("X #2" after "X").
func nextTitleIn(tx *gorm.DB, db *DB, title string) (string, error) {
	base := title
	if m := numberedTitleRE.FindStringSubmatch(title); m != nil {
		base = m[1]
	}
	var titles []string
	if err := tx.Model(&models.Session{}).Where("title = ? OR title "+db.likeCI()+" ? ESCAPE '\\'", base, EscapeLike(base)+" #%").
		Pluck("title", &titles).Error; err != nil {
		return "", err
	}
	if len(titles) == 0 {
		return base, nil
	}
	max := 1
	for _, t := range titles {
		if _, n := SplitNumberedTitle(t); n > max {
			max = n
		}
	}
	return base + " #" + strconv.Itoa(max+1), nil
}

func (r *titleRepo) Stored(ctx context.Context) ([]string, error) {
	return Read(ctx, r.db, "titles.stored", func(tx *gorm.DB) ([]string, error) {
		out := []string{}
		err := tx.Model(&models.Session{}).Where("title IS NOT NULL").Order("title").Pluck("title", &out).Error
		return out, err
	})
}
