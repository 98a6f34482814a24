package browse

import (
	"fmt"

	"github.com/hermesstate/hermesstate/models"
)

// conv is an open conversation: a few windows of PageSize messages around
// the view, laid out lazily, and a position (the message at the top of the
// view and the line within it). Windows are numbered: window n holds the
// messages n*PageSize to (n+1)*PageSize-1 in id order.
type conv struct {
	gen               int
	id, title, source string
	session           *models.Session
	opt               Options
	width             int

	total   int64 // -1 until the first window (or jump) says
	pages   map[int64][]models.Message
	used    map[int64]int64 // window → last use, for eviction
	clock   int64
	loading map[int64]bool
	cache   map[int64][]string // laid-out lines by message index

	top      int64
	topLine  int
	follow   bool  // keep the end in view (after G/end)
	expanded bool  // tool calls, tool output and reasoning unfolded
	jumping  bool  // waiting to learn where a hit's message sits
	hitID    int64 // the message a search hit opened (marked)
	height   int   // body height of the last layout
	err      error

	// wantLo..wantHi are the windows the view needs (set by need).
	wantLo, wantHi int64

	// loads counts windows received (tests check that a long session is
	// never read whole).
	loads int
}

func newConv(gen int, r row, opt Options, width int) *conv {
	return &conv{gen: gen, id: r.id, title: r.title, source: r.source, opt: opt, width: width, total: -1, wantLo: -1, wantHi: -1,
		pages: map[int64][]models.Message{}, used: map[int64]int64{}, loading: map[int64]bool{},
		cache: map[int64][]string{}, jumping: r.msgID > 0, hitID: r.msgID}
}

func (c *conv) ps() int64 { return int64(c.opt.PageSize) }

// message returns message i when its window is held.
func (c *conv) message(i int64) (*models.Message, bool) {
	p := i / c.ps()
	msgs, ok := c.pages[p]
	j := i - p*c.ps()
	if !ok || j >= int64(len(msgs)) {
		return nil, false
	}
	return &msgs[j], true
}

// lines lays out message i (a one-line placeholder while its window loads).
func (c *conv) lines(i int64) []string {
	if ls, ok := c.cache[i]; ok {
		return ls
	}
	m, ok := c.message(i)
	if !ok {
		return []string{stDim.Render(fmt.Sprintf("  … loading message #%d", i+1))}
	}
	ls := renderMessage(m, i, c.width, c.expanded, m.ID == c.hitID, c.opt.TimeZone)
	for k, l := range ls {
		ls[k] = fit(l, c.width)
	}
	c.cache[i] = ls
	return ls
}

func (c *conv) resize(width int) {
	if width != c.width {
		c.width = width
		c.cache = map[int64][]string{}
		c.settle(c.height)
	}
}

func (c *conv) toggleFold() {
	c.expanded = !c.expanded
	c.cache = map[int64][]string{}
}

// handle applies a store result for this conversation.
func (c *conv) handle(msg any) {
	switch msg := msg.(type) {
	case sessionMsg:
		if msg.gen != c.gen {
			return
		}
		if msg.err != nil {
			c.err = msg.err
			return
		}
		c.session = msg.s
		if msg.s.Title != nil {
			c.title = *msg.s.Title
		}
		c.source = msg.s.Source
	case jumpMsg:
		if msg.gen != c.gen {
			return
		}
		c.jumping = false
		if msg.err != nil {
			c.err = msg.err
			return
		}
		c.total = msg.total
		c.top, c.topLine = min(msg.start, max(0, msg.total-1)), 0
		c.settle(c.height)
	case pageMsg:
		if msg.gen != c.gen {
			return
		}
		delete(c.loading, msg.req.n)
		if msg.err != nil {
			c.err = msg.err
			return
		}
		c.loads++
		p := msg.page
		c.total = p.Total
		if len(p.Messages) > 0 && p.Start != msg.req.n*c.ps() {
			// The session changed under us (rows rewound or removed):
			// drop every window; need() reloads by offset.
			c.pages, c.used, c.cache = map[int64][]models.Message{}, map[int64]int64{}, map[int64][]string{}
			c.loading = map[int64]bool{}
			c.settle(c.height)
			return
		}
		c.pages[msg.req.n] = p.Messages
		c.clock++
		c.used[msg.req.n] = c.clock
		for i := msg.req.n * c.ps(); i < (msg.req.n+1)*c.ps(); i++ {
			delete(c.cache, i) // placeholders become messages
		}
		c.evict()
		c.settle(c.height)
	}
}

// need returns the windows the view around the position needs (the ones
// on screen and a margin each way) that are neither held nor loading.
func (c *conv) need(height int) []pageReq {
	c.height = height
	if c.err != nil || c.jumping {
		return nil
	}
	if c.total < 0 {
		if len(c.loading) > 0 {
			return nil
		}
		c.loading[0] = true
		return []pageReq{{n: 0, size: c.opt.PageSize}}
	}
	if c.total == 0 {
		return nil
	}
	const margin = 50
	lo := max(0, c.top-margin)
	hi := min(c.total-1, c.top+int64(height)+margin)
	c.wantLo, c.wantHi = lo/c.ps(), hi/c.ps()
	var out []pageReq
	for p := lo / c.ps(); p <= hi/c.ps(); p++ {
		if _, ok := c.pages[p]; ok {
			c.clock++
			c.used[p] = c.clock
			continue
		}
		if c.loading[p] {
			continue
		}
		req := pageReq{n: p, size: c.opt.PageSize}
		if prev, ok := c.pages[p-1]; ok && len(prev) > 0 {
			req.afterID = prev[len(prev)-1].ID
		} else if next, ok := c.pages[p+1]; ok && len(next) > 0 {
			req.beforeID = next[0].ID
		}
		c.loading[p] = true
		out = append(out, req)
	}
	return out
}

// evict drops the windows farthest from the position beyond MaxWindows,
// never one the view needs now (so a small MaxWindows cannot make windows
// be read again and again).
func (c *conv) evict() {
	for len(c.pages) > c.opt.MaxWindows {
		at := c.top / c.ps()
		far, farDist := int64(-1), int64(-1)
		for p := range c.pages {
			if p >= c.wantLo && p <= c.wantHi {
				continue
			}
			d := p - at
			if d < 0 {
				d = -d
			}
			if d > farDist || (d == farDist && c.used[p] < c.used[far]) {
				far, farDist = p, d
			}
		}
		if far < 0 {
			return // every window held is in view
		}
		delete(c.pages, far)
		delete(c.used, far)
		for i := far * c.ps(); i < (far+1)*c.ps(); i++ {
			delete(c.cache, i)
		}
	}
}

// remaining reports whether no more than h lines are left from the
// position to the end (the end is in view).
func (c *conv) atEnd(h int) bool {
	if c.total <= 0 {
		return true
	}
	rem := len(c.lines(c.top)) - c.topLine
	for i := c.top + 1; rem <= h && i < c.total; i++ {
		rem += len(c.lines(i))
	}
	return rem <= h
}

func (c *conv) down1(h int) bool {
	if c.atEnd(h) {
		return false
	}
	if c.topLine+1 < len(c.lines(c.top)) {
		c.topLine++
		return true
	}
	if c.top+1 < c.total {
		c.top++
		c.topLine = 0
		return true
	}
	return false
}

func (c *conv) up1() bool {
	if c.topLine > 0 {
		c.topLine--
		return true
	}
	if c.top > 0 {
		c.top--
		c.topLine = len(c.lines(c.top)) - 1
		return true
	}
	return false
}

// scroll moves the view by n lines (negative: up).
func (c *conv) scroll(n, h int) {
	if c.total <= 0 {
		return
	}
	if n < 0 {
		c.follow = false
		for ; n < 0 && c.up1(); n++ {
		}
		return
	}
	for ; n > 0 && c.down1(h); n-- {
	}
}

func (c *conv) home() {
	c.follow = false
	c.top, c.topLine = 0, 0
}

// end shows the last lines and keeps them in view as windows arrive.
func (c *conv) end(h int) {
	c.follow = true
	c.settle(h)
}

// nextMessage puts the next (d > 0) or previous message at the top.
func (c *conv) nextMessage(d, h int) {
	if c.total <= 0 {
		return
	}
	if d < 0 {
		c.follow = false
		if c.topLine > 0 {
			c.topLine = 0
		} else if c.top > 0 {
			c.top--
		}
		return
	}
	if c.atEnd(h) {
		return
	}
	if c.top+1 < c.total {
		c.top, c.topLine = c.top+1, 0
	}
}

// settle keeps the position valid after a change of layout: pinned to the
// end when following or when the end is in view (no empty space below
// the last message while earlier ones could fill it), else within the
// message at the top.
func (c *conv) settle(h int) {
	if c.total < 0 {
		return
	}
	if c.total == 0 {
		c.top, c.topLine = 0, 0
		return
	}
	if c.top >= c.total {
		c.top, c.topLine = c.total-1, 0
	}
	if h > 0 && (c.follow || (c.heldToEnd() && c.atEnd(h))) {
		rem := 0
		for i := c.total - 1; i >= 0; i-- {
			l := len(c.lines(i))
			if rem+l >= h {
				c.top, c.topLine = i, rem+l-h
				return
			}
			rem += l
		}
		c.top, c.topLine = 0, 0
		return
	}
	if n := len(c.lines(c.top)); c.topLine >= n {
		c.topLine = n - 1
	}
}

// heldToEnd reports whether every window from the position to the end is
// held (placeholders do not tell how long the rest is).
func (c *conv) heldToEnd() bool {
	for p := c.top / c.ps(); p <= (c.total-1)/c.ps(); p++ {
		if _, ok := c.pages[p]; !ok {
			return false
		}
	}
	return true
}

// view returns h lines from the position.
func (c *conv) view(h int) []string {
	var out []string
	switch {
	case c.err != nil:
	case c.total == 0:
		out = append(out, stDim.Render("  (this session has no messages)"))
	case c.total > 0:
		skip := c.topLine
		for i := c.top; len(out) < h && i < c.total; i++ {
			ls := c.lines(i)
			if skip < len(ls) {
				out = append(out, ls[skip:]...)
			}
			skip = 0
		}
	}
	if len(out) > h {
		out = out[:h]
	}
	for len(out) < h {
		out = append(out, "")
	}
	return out
}
