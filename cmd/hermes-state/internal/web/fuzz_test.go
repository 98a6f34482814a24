package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/web"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/repo"
)

// FuzzPages: any path and query (filters, offsets, session and message
// ids, search text) gets an answer, never a panic or a 500: a page, a
// redirect, or a 4xx naming what was wrong.
func FuzzPages(f *testing.F) {
	st := hermesstatetest.Fresh(f)
	_, err := st.Sessions().Create(f.Context(), repo.SessionInput{ID: "fz", Source: "cli"})
	if err != nil {
		f.Fatal(err)
	}
	hermesstatetest.AppendAll(f, st, "fz", repo.MessageInput{Role: "user", Content: sp("fuzz the deploy")})
	srv, err := web.New(web.Options{Store: st, Location: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][2]string{{"/", "offset=-1"}, {"/search", "q=deploy&since=2026-13-01"}, {"/search", "q=%22&role=robot"},
		{"/s/fz", "p=99999999999"}, {"/s/fz/m/1", ""}, {"/s/f", "all=1"}, {"/search", "q=deploy&partial=more&offset=5"}, {"/usage", "source=x"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, path, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		u := &url.URL{Path: "/" + path, RawQuery: q.Encode()}
		res, _ := get(t, srv, u.String())
		if res.StatusCode >= 500 || res.StatusCode == 0 {
			t.Fatalf("%s: %d", u, res.StatusCode)
		}
		if res.StatusCode == http.StatusOK && res.Header.Get("Content-Security-Policy") != web.CSP {
			t.Fatalf("%s: no CSP", u)
		}
	})
}
