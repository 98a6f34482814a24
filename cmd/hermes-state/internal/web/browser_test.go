package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/web"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/repo"
)

// ShotsEnv names a directory the browser test also copies its screenshots
// to (they are written under the test's temp dir, which is removed).
const ShotsEnv = "HERMESSTATE_SCREENSHOTS"

// chromium returns the path of Debian's chromium, skipping the test
// without it (failing under CI, where .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is missing: .ci/run installs it (apt-get install chromium) for the browser test")
	}
	t.Skip("chromium is not installed: the browser test drives Debian's chromium headless (apt-get install chromium)")
	return ""
}

// TestBrowser drives a real headless Chromium through the page: the
// listing (with hostile titles and sources), a search typed into the box
// (results as you type, the address following), a hit opened in a long
// session whose message sits on the conversation's second page (the
// page's script asks the server where it is), the highlighted message
// being the hit's, and a conversation full of payloads. On every page the
// marker a payload would set stays unset. Screenshots of the three pages
// at 1280x800 and 390x844 go under the test's temp dir (and $ShotsEnv).
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHostile(t)
	ctx := context.Background()
	_, err := h.st.Sessions().Create(ctx, repo.SessionInput{ID: "long-deploy", Source: "cli", Model: "anthropic/claude-sonnet-4"})
	require.NoError(t, err)
	_, err = h.st.Titles().Set(ctx, "long-deploy", "Rolling deploy of the api")
	require.NoError(t, err)
	var ms []repo.MessageInput
	for i := range 90 {
		switch {
		case i == 45:
			ms = append(ms, repo.MessageInput{Role: "user", Content: sp("Did the **zanzibarneedle** canary pass?\n\n```sh\nkubectl rollout status deploy/api\n```")})
		case i%3 == 1:
			ms = append(ms, repo.MessageInput{Role: "assistant", Content: sp(fmt.Sprintf("Step %d: checking the rollout.", i)),
				ToolCalls: []byte(fmt.Sprintf(`[{"id":"c%d","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"kubectl get pods -l app=api\",\"note\":\"\\u68c0\\u67e5 %d\"}"}}]`, i, i))})
		case i%3 == 2:
			ms = append(ms, repo.MessageInput{Role: "tool", ToolCallID: fmt.Sprintf("c%d", i-1), ToolName: "terminal", Content: sp("NAME      READY   STATUS\napi-0     1/1     Running")})
		default:
			ms = append(ms, repo.MessageInput{Role: "user", Content: sp(fmt.Sprintf("Message %d about the deploy.", i))})
		}
	}
	ids := hermesstatetest.AppendAll(t, h.st, "long-deploy", ms...)
	needle := ids[45]

	srv := newServer(t, web.Options{Store: readOnly(t, h.path), Location: h.path, ConversationPage: 20})
	ts := httptest.NewServer(srv)
	defer ts.Close()

	shots := t.TempDir()
	alloc, cancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800))
	defer cancel()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// The first call starts the browser; it must not carry a timeout.
	require.NoError(t, chromedp.Do(browser, chromedp.Navigate("about:blank")), "starting %s", exe)
	bctx, cancel := context.WithTimeout(browser, 120*time.Second)
	defer cancel()

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(bctx, steps...), what)
	}
	str := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		require.NoError(t, err, expr)
		return v
	}
	// unset checks that no stored payload ran on the page shown.
	unset := func(what string) {
		t.Helper()
		require.Equal(t, "undefined", str(`typeof window.`+Marker), "%s: a stored payload ran", what)
	}
	shot := func(name string) {
		t.Helper()
		buf, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(shots, name+".png"), buf, 0o644))
	}
	waitTarget := chromedp.Steps(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](`document.querySelector('.msg:target') !== null`, chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
		return err
	}))

	search := ts.URL + "/search"
	do("listing", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.ID("sessions")))
	unset("listing")
	shot("listing-1280x800")

	do("type a search", chromedp.Navigate(search), chromedp.WaitVisible(chromedp.ID("q")),
		chromedp.SendKeys(chromedp.ID("q"), "zanzibarneedle"), chromedp.WaitVisible(chromedp.CSS(".hit-link")))
	require.Equal(t, "1", str(`String(document.querySelectorAll('.hit-link').length)`))
	require.Equal(t, search+"?q=zanzibarneedle&source=&role=&since=&until=&sort=relevance", str(`location.href`), "the address follows the search")
	href := str(`document.querySelector('.hit-link').getAttribute('href')`)
	require.Equal(t, fmt.Sprintf("/s/long-deploy#m%d", needle), href)
	unset("search")

	// Results as you type over the hostile store; "N more" is filled in.
	str(`document.getElementById('q').value = ''`)
	do("search as you type", chromedp.SendKeys(chromedp.ID("q"), "deploy"),
		chromedp.WaitVisible(chromedp.ID("more")),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`/^\d+\+? more$/.test(document.getElementById('more').textContent)`, chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
			return err
		}))
	require.Regexp(t, `^20 hits; \d+ more$`, str(`document.getElementById('count').textContent`))
	unset("search as you type")
	shot("search-1280x800")
	str(`document.getElementById('q').value = ''`)
	do("hostile hits", chromedp.SendKeys(chromedp.ID("q"), "pwnedword"),
		chromedp.WaitVisible(chromedp.CSS(`.hit-link[href^="/s/hostile-1"]`)))
	unset("hostile hits")

	// Open the hit: the message is on the second page of the long session;
	// the page's script asks the server where it is, and the conversation
	// opens scrolled to it, highlighted (:target).
	do("open the hit", chromedp.Navigate(ts.URL+href), waitTarget)
	require.Equal(t, fmt.Sprintf("m%d", needle), str(`document.querySelector('.msg:target').id`), "the highlighted message is the hit's")
	require.Equal(t, fmt.Sprintf("%s/s/long-deploy?p=2#m%d", ts.URL, needle), str(`location.href`), "the hit's page of the long session")
	require.Equal(t, "true", str(`String((function(){var r=document.querySelector('.msg:target').getBoundingClientRect();return r.top>=0&&r.top<window.innerHeight})())`), "the hit is scrolled into view")
	require.NotEqual(t, "rgba(0, 0, 0, 0)", str(`getComputedStyle(document.querySelector('.msg:target')).outlineColor`), "the hit is highlighted")
	unset("conversation")
	shot("conversation-1280x800")

	// A tool result linked directly opens the fold around it; with every
	// fold open nothing stored runs.
	do("tool result", chromedp.Navigate(fmt.Sprintf("%s/s/hostile-1#m%d", ts.URL, h.toolRes)), waitTarget)
	require.Equal(t, "true", str(`String(document.querySelector('.msg:target').closest('details').open)`), "the fold around a linked tool result is opened")
	str(`document.querySelectorAll('details').forEach(function(d){d.open=true}); ''`)
	do("wait", chromedp.Sleep(300*time.Millisecond))
	unset("hostile conversation, every fold open")
	do("usage", chromedp.Navigate(ts.URL+"/usage"), chromedp.WaitVisible(chromedp.ID("by-source")))
	unset("usage")

	// The phone.
	do("phone listing", chromedp.EmulateViewport(390, 844), chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.ID("sessions")))
	shot("listing-390x844")
	do("phone search", chromedp.Navigate(search+"?q=deploy"), chromedp.WaitVisible(chromedp.CSS(".hit-link")))
	shot("search-390x844")
	do("phone conversation", chromedp.Navigate(ts.URL+href), waitTarget)
	shot("conversation-390x844")
	unset("phone")

	var names []string
	for _, n := range []string{"listing", "search", "conversation"} {
		for _, size := range []string{"1280x800", "390x844"} {
			p := filepath.Join(shots, n+"-"+size+".png")
			st, err := os.Stat(p)
			require.NoError(t, err)
			require.Greater(t, st.Size(), int64(2000), p)
			names = append(names, p)
		}
	}
	if dir := os.Getenv(ShotsEnv); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, p := range names {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644))
		}
	}
	t.Logf("screenshots: %s", strings.Join(names, ", "))
}
