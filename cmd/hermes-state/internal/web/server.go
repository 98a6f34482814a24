// Package web is the page `hermes-state serve` shows: the session listing,
// search as you type, a conversation and usage charts, rendered on the
// server with html/template over the store's public API, read-only unless
// the command was given --allow-write.
//
// Stored content is hostile (messages come from the web and from tools),
// so every page is built to stay inert whatever a message holds:
// html/template escapes every value for its context; Markdown is rendered
// without raw HTML and with links limited to http(s)/mailto (markdown.go);
// bidirectional-override characters are shown as visible marks; the
// Content-Security-Policy allows only this server's own script and style
// files (no inline script, no inline style, nothing from elsewhere); and
// guard refuses a request whose Host is not this server's (DNS rebinding)
// or that comes from another site's page, so no other site can read or
// drive it. The few writes (a title, archiving) are POSTs carrying a
// per-process token, and exist only with Options.Edits.
package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	hs "github.com/hermesstate/hermesstate"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Edits are the writes the page offers with --allow-write: the CLI's own
// safe edits of one session. Each returns the store's error (ErrNotFound,
// ErrInvalid, ErrConflict, ...) unchanged.
type Edits interface {
	// SetTitle sets (or with "" clears) the session's title.
	SetTitle(ctx context.Context, id, title string) error
	// SetArchived archives (on) or unarchives the session's compression
	// lineage.
	SetArchived(ctx context.Context, id string, on bool) error
}

// Options configure the page.
type Options struct {
	// Store is read for every page (opened read-only by the command).
	Store *hs.Store
	// Location names the store in the page's header.
	Location string
	// Edits, when not nil, adds the edit forms and their POST endpoints.
	Edits Edits
	// TimeZone shows times (nil: the local zone).
	TimeZone *time.Location
	// Logger receives one line per failed request (nil: none).
	Logger *slog.Logger
	// ListLimit, SearchLimit and ConversationPage size the pages (0: 50,
	// 20 and 500).
	ListLimit, SearchLimit, ConversationPage int
}

// Server serves the page. Create it with New.
type Server struct {
	opt   Options
	token string
	tmpl  *template.Template
	mux   *http.ServeMux
	cop   *http.CrossOriginProtection

	srcMu   sync.Mutex // guards the cached source list
	srcList []string
	srcAt   time.Time
}

// CSP is the Content-Security-Policy of every response: this server's own
// script and style files only, no inline script or style, nothing loaded
// from elsewhere, no framing, forms posted only here.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// New returns the page's server for opt. It returns an error only when the
// random edit token cannot be made.
func New(opt Options) (*Server, error) {
	if opt.TimeZone == nil {
		opt.TimeZone = time.Local
	}
	if opt.ListLimit <= 0 {
		opt.ListLimit = 50
	}
	if opt.SearchLimit <= 0 {
		opt.SearchLimit = 20
	}
	if opt.ConversationPage <= 0 {
		opt.ConversationPage = 500
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("making the edit token: %w", err)
	}
	s := &Server{opt: opt, token: hex.EncodeToString(tok[:]), cop: http.NewCrossOriginProtection()}
	s.tmpl = template.Must(template.New("").Funcs(template.FuncMap{
		"when":     s.when,
		"iso":      iso,
		"markdown": markdown,
		"marks":    marksOf,
		"num":      func(v int64) string { return groupDigits(v) },
		"usd":      func(v float64) string { return fmt.Sprintf("$%.4f", v) },
		"pathID":   url.PathEscape,
		"bytes":    humanBytes,
		"add":      func(a, b int) int { return a + b },
		"inList":   func(v string, l []string) bool { return slices.Contains(l, v) },
	}).ParseFS(assets, "templates/*.html"))
	s.mux = http.NewServeMux()
	s.routes()
	return s, nil
}

// Token is the per-process token the edit forms carry (a test posts it).
func (s *Server) Token() string { return s.token }

func (s *Server) routes() {
	static, _ := fs.Sub(assets, "static")
	files := http.FileServerFS(static)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	s.mux.HandleFunc("GET /{$}", s.listing)
	s.mux.HandleFunc("GET /search", s.search)
	s.mux.HandleFunc("GET /s/{id}", s.conversation)
	s.mux.HandleFunc("GET /s/{id}/m/{mid}", s.messageLink)
	s.mux.HandleFunc("GET /usage", s.usage)
	if s.opt.Edits != nil {
		s.mux.HandleFunc("POST /s/{id}/title", s.editTitle)
		s.mux.HandleFunc("POST /s/{id}/archive", s.editArchive)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "no such page: "+r.URL.Path)
	})
}

// ServeHTTP checks the request (guard), sets the security headers and
// serves it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if status, msg := s.guard(r); status != 0 {
		http.Error(w, msg, status)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// guard refuses (status, reason) a request this server must not answer:
//   - a Host header that is not a loopback name or an IP address: a page
//     of another site that made its own name resolve to this machine (DNS
//     rebinding) sends its own name as Host, and is refused;
//   - an Origin header naming another origin, or a request another site's
//     page made (Sec-Fetch-Site cross-site or same-site) other than the
//     user following a link (a top-level navigation by GET): no other site
//     can fetch, embed or post to the page;
//   - POST without Edits, and a POST http.CrossOriginProtection refuses.
func (s *Server) guard(r *http.Request) (int, string) {
	if !hostAllowed(r.Host) {
		return http.StatusMisdirectedRequest, fmt.Sprintf("refused: Host %q is not this server's address (use http://127.0.0.1:PORT/)", clip(r.Host, 80))
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if o == "null" || err != nil || !strings.EqualFold(u.Host, r.Host) || (u.Scheme != "http" && u.Scheme != "https") {
			return http.StatusForbidden, "refused: a request from another site (Origin " + clip(o, 80) + ")"
		}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		nav := r.Header.Get("Sec-Fetch-Mode") == "navigate" && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
			r.Header.Get("Sec-Fetch-Dest") == "document"
		if !nav {
			return http.StatusForbidden, "refused: a request made by another site's page"
		}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		if s.opt.Edits == nil {
			return http.StatusMethodNotAllowed, "read-only: this page was served without --allow-write"
		}
		if err := s.cop.Check(r); err != nil {
			return http.StatusForbidden, "refused: " + err.Error()
		}
	default:
		return http.StatusMethodNotAllowed, "method not allowed"
	}
	return 0, ""
}

// hostAllowed reports whether a Host header names this server by an
// address rather than by a name someone else controls: localhost (and
// *.localhost) or an IP literal, with any port.
func hostAllowed(host string) bool {
	if host == "" {
		return false
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	return net.ParseIP(h) != nil
}

// checkToken compares a posted token with this process's, in constant
// time.
func (s *Server) checkToken(r *http.Request) bool {
	got := r.PostFormValue("token")
	return len(got) == len(s.token) && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

// bidi are the characters that reorder text around them (Trojan Source):
// each is shown as a visible mark instead of acting.
var bidi = strings.NewReplacer(
	"\u202a", "[U+202A]", "\u202b", "[U+202B]", "\u202c", "[U+202C]", "\u202d", "[U+202D]", "\u202e", "[U+202E]",
	"\u2066", "[U+2066]", "\u2067", "[U+2067]", "\u2068", "[U+2068]", "\u2069", "[U+2069]",
)

// render executes template name with data into a buffer and sends it, so a
// failure becomes an error page rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.fail(w, r, http.StatusInternalServerError, "rendering the page failed: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(bidi.Replace(b.String())))
}

// errorPage is the data of the error page.
type errorPage struct {
	page
	Status  int
	Message string
}

// fail sends an error page with status and msg.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if s.opt.Logger != nil {
		s.opt.Logger.Warn("serve", "path", r.URL.Path, "status", status, "error", msg)
	}
	var b bytes.Buffer
	data := errorPage{page: s.page("Error", ""), Status: status, Message: msg}
	if err := s.tmpl.ExecuteTemplate(&b, "error.html", data); err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(bidi.Replace(b.String())))
}

// failErr sends the page for a store error: 404 for ErrNotFound, 400 for
// ErrInvalid, 409 for ErrConflict, 503 for ErrBusy, else 500.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, hs.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, hs.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, hs.ErrConflict):
		status = http.StatusConflict
	case errors.Is(err, hs.ErrBusy):
		status = http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled):
		return // the browser went away
	}
	s.fail(w, r, status, err.Error())
}
