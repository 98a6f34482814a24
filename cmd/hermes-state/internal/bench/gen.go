package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// GenOptions size the built-in corpus (GenerateCorpus). The defaults are a
// fifth of bench_hermes.py's store with the same append and long sets.
type GenOptions struct {
	Seed           int64
	Sessions       int // store sessions (default 2,000)
	PerSession     int // messages per store session (default 20)
	LongN          int // messages of the long session (default 200)
	AppendN        int // appends in all (default 5,000)
	AppendSessions int // sessions the appends go to (default 5)
}

func (o GenOptions) withDefaults() GenOptions {
	if o.Seed == 0 {
		o.Seed = 20260712
	}
	if o.Sessions <= 0 {
		o.Sessions = 2000
	}
	if o.PerSession <= 0 {
		o.PerSession = 20
	}
	if o.LongN <= 0 {
		o.LongN = 200
	}
	if o.AppendSessions <= 0 {
		o.AppendSessions = 5
	}
	if o.AppendN <= 0 {
		o.AppendN = 5000
	}
	if o.AppendN < o.AppendSessions {
		o.AppendN = o.AppendSessions
	}
	return o
}

// baseTS is 2026-01-01T00:00:00Z, the start of the synthetic timeline (as
// in bench_hermes.py).
const baseTS = 1767225600.0

// The vocabulary follows bench_hermes.py's corpus in kind (Zipf-distributed
// syllable words, technical sentences, Chinese and Japanese text, tool
// calls, planted search terms with the same frequencies) so that the same
// 11 queries find work to do; it is not the same text.
var (
	genSyll  = strings.Fields("ka lo mi ren tas vor ne shi bar qu el dan po rix sa tem un gal fi mor zen ha ob lin cre tu vi nor pex ad")
	genTech  = []string{"the build", "the nginx config", "the CI pipeline", "the postgres replica", "the cron job", "the auth middleware", "the websocket handler", "the cache layer", "the API gateway", "the worker pool"}
	genVerbs = []string{"failed with", "returned", "is blocked on", "started throwing", "recovered from", "keeps hitting"}
	genErrs  = []string{"a timeout after 30s", "exit code 137", "permission denied", "a 502 from upstream", "an OOM kill", "a stale lock file", "a TLS handshake error"}
	genFiles = []string{"src/app.py", "config/settings.yaml", "internal/store/db.go", "web/package.json", "Makefile", "README.md"}
	genTools = []string{"terminal", "read_file", "search_files", "web_search", "patch", "write_file"}
	genCmds  = []string{"git status", "pytest -x tests/", "ls -la src/", "kubectl get pods -n prod", "npm run build", "go test ./..."}
	genZH    = []string{"我们", "需要", "检查", "日志", "错误", "部署", "容器", "数据库", "连接", "超时", "用户", "请求", "文件", "目录", "权限", "测试", "结果", "问题", "解决", "方法", "版本", "更新", "环境", "变量", "网络", "缓存", "服务", "端口", "然后", "因为", "所以", "旅游", "路线", "推荐", "城市", "酒店", "天气", "山水", "北京", "上海", "计划", "代码", "提交", "分支"}
	genJA    = []string{"データ", "設定", "ファイル", "サーバー", "接続", "エラー", "確認", "して", "ください", "します", "です", "の", "を", "に", "は", "が", "実行", "環境", "変数", "更新", "テスト", "結果", "問題", "解決", "ログ", "出力", "画面", "ユーザー", "認証"}
)

type genPlant struct {
	p     float64
	sents []string
}

var (
	genPlantsEN = []genPlant{
		{0.035, []string{"I rebuilt the docker image and pushed it to the registry.", "docker compose up -d restarted the api container cleanly."}},
		{0.035, []string{"The deploy to staging finished in four minutes.", "We deployed the hotfix to production at noon.", "The deployment is waiting for the canary to pass."}},
		{0.006, []string{"The docker deployment on the edge nodes is still flaky."}},
		{0.0025, []string{"Point KUBECONFIG at the new cluster; the old kubeconfig has expired credentials."}},
	}
	genRefused  = []string{"curl: (7) Failed to connect to localhost port 8080: Connection refused", "dial tcp 127.0.0.1:6379: connect: connection refused"}
	genPlantsZH = []genPlant{
		{0.05, []string{"我想去广西桂林旅游，推荐一下路线。", "桂林的山水很有名，明天去。"}},
		{0.03, []string{"先检查服务端配置是否正确。", "服务端配置已经更新，需要重启。"}},
		{0.012, []string{"请修改youer服务端的配置文件。"}},
		{0.02, []string{"docker 容器已经重启。"}},
	}
	genPlantsJA = []genPlant{
		{0.06, []string{"データベースの接続を確認してください。", "データベースのバックアップを作成しました。"}},
		{0.05, []string{"全文検索の結果を表示します。", "検索が遅いので調査します。"}},
	}
)

type generator struct {
	r   *rand.Rand
	lex []string
	cum []float64
}

func newGenerator(seed int64) *generator {
	g := &generator{r: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
	seen := map[string]bool{}
	for len(g.lex) < 6000 {
		var b strings.Builder
		for n := 1 + g.r.IntN(4); n > 0; n-- {
			b.WriteString(genSyll[g.r.IntN(len(genSyll))])
		}
		w := b.String()
		if seen[w] || strings.Contains(w, "deplo") || strings.Contains(w, "ploy") || w == "docker" || w == "kubeconfig" {
			continue
		}
		seen[w] = true
		g.lex = append(g.lex, w)
	}
	acc := 0.0
	for i := range g.lex {
		acc += 1 / pow107(float64(i+1))
		g.cum = append(g.cum, acc)
	}
	return g
}

// pow107 is x^1.07 (Zipf exponent of the word frequencies).
func pow107(x float64) float64 { return math.Pow(x, 1.07) }

func (g *generator) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *generator) word() string {
	x := g.r.Float64() * g.cum[len(g.cum)-1]
	i, _ := slices.BinarySearch(g.cum, x)
	if i >= len(g.lex) {
		i = len(g.lex) - 1
	}
	return g.lex[i]
}

func (g *generator) fillerEN() string {
	n := 6 + g.r.IntN(11)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.word()
	}
	return strings.ToUpper(ws[0][:1]) + ws[0][1:] + " " + strings.Join(ws[1:], " ") + "."
}

func (g *generator) techEN() string {
	switch t := g.r.Float64(); {
	case t < 0.5:
		s := g.pick(genTech)
		return strings.ToUpper(s[:1]) + s[1:] + " " + g.pick(genVerbs) + " " + g.pick(genErrs) + "."
	case t < 0.8:
		return fmt.Sprintf("Line %d of %s needs a change in %s.", 1+g.r.IntN(900), g.pick(genFiles), g.pick(genTech))
	default:
		return fmt.Sprintf("Running `%s` shows %d warnings in %s.", g.pick(genCmds), 2+g.r.IntN(59), g.pick(genFiles))
	}
}

func (g *generator) text(lang string, length int, role string) string {
	var parts []string
	plants := genPlantsJA
	switch lang {
	case "en":
		p := 0.004
		if role == "tool" {
			p = 0.04
		}
		plants = append(append([]genPlant(nil), genPlantsEN...), genPlant{p, genRefused})
	case "zh":
		plants = genPlantsZH
	}
	size := 0
	for _, pl := range plants {
		if g.r.Float64() < pl.p {
			s := g.pick(pl.sents)
			parts = append(parts, s)
			size += len(s)
		}
	}
	for size < length {
		var s string
		if lang == "en" {
			if g.r.Float64() < 0.45 {
				s = g.techEN()
			} else {
				s = g.fillerEN()
			}
		} else {
			pool := genZH
			if lang == "ja" {
				pool = genJA
			}
			var b strings.Builder
			for n := 4 + g.r.IntN(7); n > 0; n-- {
				b.WriteString(g.pick(pool))
			}
			b.WriteString("。")
			if g.r.Float64() < 0.2 {
				b.WriteString(" " + g.techEN())
			}
			s = b.String()
		}
		parts = append(parts, s)
		size += len(s) + 1
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	if lang == "en" {
		return strings.Join(parts, " ")
	}
	return strings.Join(parts, "")
}

func (g *generator) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.r.IntN(16)]
	}
	return string(b)
}

func (g *generator) toolCall() map[string]any {
	name := g.pick(genTools)
	var args map[string]string
	switch name {
	case "terminal":
		c := g.pick(genCmds)
		if g.r.Float64() < 0.08 {
			c = "docker ps -a"
		}
		args = map[string]string{"command": c}
	case "read_file", "write_file", "patch":
		args = map[string]string{"path": g.pick(genFiles)}
	case "search_files":
		args = map[string]string{"pattern": g.lex[g.r.IntN(300)], "path": "src/"}
	default:
		args = map[string]string{"query": g.word() + " " + g.word() + " " + g.word()}
	}
	a, _ := json.Marshal(args)
	return map[string]any{"id": "call_" + g.hex(24), "type": "function", "function": map[string]any{"name": name, "arguments": string(a)}}
}

func strp(s string) *string { return &s }

func (g *generator) messages(sid, lang string, n int, t0 float64) []CorpusMessage {
	var ms []CorpusMessage
	ts := t0
	add := func(m CorpusMessage) {
		ts += 1 + g.r.Float64()*39
		m.SessionID, m.Seq, m.Timestamp = sid, len(ms), float64(int64(ts*1e6))/1e6
		ms = append(ms, m)
	}
	add(CorpusMessage{Role: "user", Content: strp(g.text(lang, 40+g.r.IntN(221), "user"))})
	for len(ms) < n {
		if g.r.Float64() < 0.45 {
			calls := []map[string]any{g.toolCall()}
			if g.r.Float64() >= 0.8 {
				calls = append(calls, g.toolCall())
			}
			raw, _ := pyDumpsCalls(calls)
			tc := int64(20 + g.r.IntN(181))
			add(CorpusMessage{Role: "assistant", Content: strp(g.text(lang, 20+g.r.IntN(101), "assistant")), ToolCalls: raw,
				FinishReason: strp("tool_calls"), TokenCount: &tc})
			for _, c := range calls {
				fn := c["function"].(map[string]any)
				add(CorpusMessage{Role: "tool", Content: strp(g.text(lang, 100+g.r.IntN(501), "tool")),
					ToolCallID: strp(c["id"].(string)), ToolName: strp(fn["name"].(string))})
			}
		} else {
			tc := int64(50 + g.r.IntN(851))
			add(CorpusMessage{Role: "assistant", Content: strp(g.text(lang, 150+g.r.IntN(551), "assistant")),
				FinishReason: strp("stop"), TokenCount: &tc})
			add(CorpusMessage{Role: "user", Content: strp(g.text(lang, 40+g.r.IntN(221), "user"))})
		}
	}
	return ms[:n]
}

// pyDumpsCalls writes tool calls the way Python's json.dumps does (", "
// and ": " separators, keys in order id, type, function{name, arguments}).
func pyDumpsCalls(calls []map[string]any) (json.RawMessage, error) {
	var b strings.Builder
	b.WriteByte('[')
	for i, c := range calls {
		if i > 0 {
			b.WriteString(", ")
		}
		fn := c["function"].(map[string]any)
		id, _ := json.Marshal(c["id"])
		name, _ := json.Marshal(fn["name"])
		args, _ := json.Marshal(fn["arguments"])
		fmt.Fprintf(&b, `{"id": %s, "type": "function", "function": {"name": %s, "arguments": %s}}`, id, name, args)
	}
	b.WriteByte(']')
	return json.RawMessage(b.String()), nil
}

func (g *generator) session(set string, idx, n int, titles map[string]bool) (CorpusSession, []CorpusMessage) {
	lang := "en"
	switch x := g.r.IntN(100); {
	case x >= 95:
		lang = "ja"
	case x >= 85:
		lang = "zh"
	}
	t0 := baseTS + float64(idx)*600 + g.r.Float64()*300
	sid := time.Unix(int64(t0), 0).UTC().Format("20060102_150405") + "_" + g.hex(6)
	if set != "store" {
		sid += "_" + set
	}
	w := func() string { s := g.lex[g.r.IntN(3000)]; return strings.ToUpper(s[:1]) + s[1:] }
	title := w() + " " + w() + " " + w()
	for titles[title] {
		title += fmt.Sprintf(" %d", 2+g.r.IntN(98))
	}
	titles[title] = true
	var prompt strings.Builder
	prompt.WriteString("You are Hermes, a helpful agent.")
	for k := 8 + g.r.IntN(13); k > 0; k-- {
		prompt.WriteString(" " + g.fillerEN())
	}
	sources := []string{"cli", "cli", "cli", "cli", "cli", "cli", "cli", "cli", "cli", "cli", "cli", "cli", "telegram", "telegram", "telegram", "telegram", "discord", "discord", "cron", "api_server"}
	models := []string{"anthropic/claude-sonnet-4", "openai/gpt-5", "nous/hermes-4-405b", "google/gemini-2.5-pro"}
	s := CorpusSession{Set: set, ID: sid, Lang: lang, Source: g.pick(sources), Model: g.pick(models), Title: title,
		SystemPrompt: prompt.String(), StartedAt: float64(int64(t0*1e6)) / 1e6}
	return s, g.messages(sid, lang, n, t0)
}

// GenerateCorpus writes the built-in corpus to path in bench_hermes.py's
// format and returns its statistics. It returns an error when the file
// cannot be written.
func GenerateCorpus(path string, o GenOptions) (*CorpusStats, error) {
	o = o.withDefaults()
	start := time.Now()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	perAppend := o.AppendN / o.AppendSessions
	meta := map[string]any{"type": "meta", "generator": "hermes-state bench", "format": 1, "seed": o.Seed,
		"sets": map[string][2]int{"store": {o.Sessions, o.PerSession}, "long": {1, o.LongN}, "append": {o.AppendSessions, perAppend}}}
	if err := enc.Encode(meta); err != nil {
		f.Close()
		return nil, err
	}
	g := newGenerator(o.Seed)
	titles := map[string]bool{}
	idx := 0
	for _, plan := range []struct {
		set      string
		count, n int
	}{{"append", o.AppendSessions, perAppend}, {"long", 1, o.LongN}, {"store", o.Sessions, o.PerSession}} {
		for k := 0; k < plan.count; k++ {
			s, ms := g.session(plan.set, idx, plan.n, titles)
			idx++
			if err := enc.Encode(struct {
				Type string `json:"type"`
				CorpusSession
			}{"session", s}); err != nil {
				f.Close()
				return nil, err
			}
			for _, m := range ms {
				if m.ToolCalls == nil {
					m.ToolCalls = json.RawMessage("null")
				}
				if err := enc.Encode(struct {
					Type string `json:"type"`
					CorpusMessage
				}{"message", m}); err != nil {
					f.Close()
					return nil, err
				}
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	st, err := Stats(path)
	if err != nil {
		return nil, err
	}
	st.Generator, st.Seed, st.Seconds = "hermes-state bench", o.Seed, round1(time.Since(start).Seconds())
	return st, nil
}
