package mcpserver

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzFrames: every line the filter passes on is a message the SDK
// decodes (so it cannot end the connection), and every other line gets
// an error code JSON-RPC defines.
func FuzzFrames(f *testing.F) {
	for _, s := range []string{`not json`, `[]`, `{}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":null,"method":"x"}`, `{"jsonrpc":"2.0","id":1e3,"method":"x"}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}`, `{"jsonrpc":"2.0","id":3,"method":"x","params":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		code, msg, _ := checkFrame(line)
		switch code {
		case 0:
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				t.Fatalf("passed %q, which the SDK refuses: %v", line, err)
			}
		case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest:
			if msg == "" {
				t.Fatalf("no message for %q", line)
			}
		default:
			t.Fatalf("code %d for %q", code, line)
		}
	})
}
