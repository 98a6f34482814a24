package bench

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The corpus is bench_hermes.py's JSONL format: a "meta" line, then for
// each session a "session" line followed by its "message" lines. The field
// names are Hermes' own. Sessions belong to a set: "append" (the append
// and conc phases), "long" (the 200-message session of the listing phase)
// and "store" (the large store of the build phase).

// CorpusSession is a "session" line.
type CorpusSession struct {
	Set          string  `json:"set"`
	ID           string  `json:"id"`
	Lang         string  `json:"lang"`
	Source       string  `json:"source"`
	Model        string  `json:"model"`
	Title        string  `json:"title"`
	SystemPrompt string  `json:"system_prompt"`
	StartedAt    float64 `json:"started_at"`
}

// CorpusMessage is a "message" line. ToolCalls keeps the JSON text as
// written (bench_hermes.py's json.dumps form, which is what Hermes stores).
type CorpusMessage struct {
	SessionID    string          `json:"session_id"`
	Seq          int             `json:"seq"`
	Timestamp    float64         `json:"timestamp"`
	Role         string          `json:"role"`
	Content      *string         `json:"content"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	ToolCallID   *string         `json:"tool_call_id"`
	ToolName     *string         `json:"tool_name"`
	FinishReason *string         `json:"finish_reason"`
	TokenCount   *int64          `json:"token_count"`
}

// HasToolCalls reports whether the message carries tool calls (not null,
// not an empty list).
func (m *CorpusMessage) HasToolCalls() bool {
	s := string(m.ToolCalls)
	return s != "" && s != "null" && s != "[]"
}

type corpusLine struct {
	Type string `json:"type"`
	CorpusSession
	CorpusMessage
}

// CorpusStats describes a corpus the way bench_hermes.py's meta.corpus does
// (the store and long sets only), plus the file's sha256 and size.
type CorpusStats struct {
	Sessions                     int            `json:"sessions"`
	Messages                     int            `json:"messages"`
	ContentBytes                 int64          `json:"content_bytes"`
	ToolCallsBytes               int64          `json:"tool_calls_bytes"`
	ToolCallMessages             int            `json:"tool_call_messages"`
	ByLang                       map[string]int `json:"by_lang"`
	ByRole                       map[string]int `json:"by_role"`
	AvgContentBytes              float64        `json:"avg_content_bytes"`
	AvgContentPlusToolCallsBytes float64        `json:"avg_content_plus_tool_calls_bytes"`
	SHA256                       string         `json:"sha256"`
	Bytes                        int64          `json:"bytes"`
	Path                         string         `json:"path"`
	Generator                    string         `json:"generator,omitempty"`
	Seed                         int64          `json:"seed,omitempty"`
	Seconds                      float64        `json:"seconds,omitempty"`
}

// ReadCorpus calls fn for every session of the given sets, in file order,
// with its messages. It streams: one session's messages are in memory at a
// time. It returns an error for a file that cannot be read or parsed.
func ReadCorpus(path string, sets map[string]bool, fn func(s *CorpusSession, ms []CorpusMessage) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("bench: corpus: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var cur *CorpusSession
	var msgs []CorpusMessage
	flush := func() error {
		if cur != nil && sets[cur.Set] {
			return fn(cur, msgs)
		}
		return nil
	}
	for n := 1; sc.Scan(); n++ {
		var l corpusLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("bench: corpus %s line %d: %w", path, n, err)
		}
		switch l.Type {
		case "session":
			if err := flush(); err != nil {
				return err
			}
			s := l.CorpusSession
			cur, msgs = &s, nil
		case "message":
			if cur != nil && sets[cur.Set] {
				msgs = append(msgs, l.CorpusMessage)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("bench: corpus %s: %w", path, err)
	}
	return flush()
}

// Stats reads the whole corpus and returns its statistics.
func Stats(path string) (*CorpusStats, error) {
	st := &CorpusStats{ByLang: map[string]int{}, ByRole: map[string]int{}}
	err := ReadCorpus(path, map[string]bool{"store": true, "long": true}, func(s *CorpusSession, ms []CorpusMessage) error {
		st.Sessions++
		st.ByLang[s.Lang]++
		for i := range ms {
			m := &ms[i]
			st.Messages++
			if m.Content != nil {
				st.ContentBytes += int64(len(*m.Content))
			}
			st.ByRole[m.Role]++
			if m.HasToolCalls() {
				st.ToolCallMessages++
				st.ToolCallsBytes += int64(len(m.ToolCalls))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if st.Messages > 0 {
		st.AvgContentBytes = round1(float64(st.ContentBytes) / float64(st.Messages))
		st.AvgContentPlusToolCallsBytes = round1(float64(st.ContentBytes+st.ToolCallsBytes) / float64(st.Messages))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	st.SHA256, st.Bytes = hex.EncodeToString(h.Sum(nil)), n
	if abs, err := filepath.Abs(path); err == nil {
		st.Path = abs
	} else {
		st.Path = path
	}
	return st, nil
}

// corpusMeta reads the meta line's sets ({"store": [sessions, per
// session], ...}); nil when the file has none.
func corpusMeta(path string) (map[string][2]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: corpus: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	line, err := r.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return nil, err
	}
	var m struct {
		Type string            `json:"type"`
		Sets map[string][2]int `json:"sets"`
	}
	if json.Unmarshal(line, &m) != nil || m.Type != "meta" {
		return nil, fmt.Errorf("bench: %s is not a bench_hermes.py corpus (no meta line)", path)
	}
	return m.Sets, nil
}
