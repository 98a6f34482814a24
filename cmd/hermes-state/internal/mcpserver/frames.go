package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK's stdio transport ends the connection on the first frame it
// cannot decode (not JSON, an empty batch, a message without
// "jsonrpc":"2.0", a batch after protocol 2025-06-18), so one bad line
// from a client stopped `hermes-state mcp`. frameFilter sits between the
// input and the SDK: it passes the SDK only lines that are one JSON-RPC
// 2.0 message and answers every other line itself with the error
// JSON-RPC defines for it.

// frameFilter reads newline-delimited frames from src and yields the valid
// ones (each with its newline) to its reader, the SDK's transport; an
// invalid frame is answered on out and dropped.
type frameFilter struct {
	src     *bufio.Reader
	out     *lockedWriter
	max     int    // longest frame accepted, in bytes
	pending []byte // the rest of the frame being handed out
	err     error  // the input's end or failure, once reached
}

// Read implements io.Reader for the SDK's transport.
func (f *frameFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, err := f.readLine()
		if err != nil {
			f.err = err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if code, msg, id := checkFrame(line); code != 0 {
			if werr := f.out.reply(id, code, msg); werr != nil {
				f.err = werr
			}
			continue
		}
		f.pending = append(bytes.TrimRight(line, "\r\n"), '\n')
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// Close implements io.Closer; the input itself (stdin) is left open.
func (f *frameFilter) Close() error { return nil }

// errFrameTooLong marks a frame over the limit; the line is read to its
// end and dropped.
type errFrameTooLong struct{ max int }

func (e errFrameTooLong) Error() string {
	return fmt.Sprintf("frame longer than %d bytes", e.max)
}

// readLine reads the next line (without holding more than max bytes of
// it); a longer line is answered as a parse error and nil is returned.
func (f *frameFilter) readLine() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := f.src.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > f.max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			if werr := f.out.reply(nil, jsonrpc.CodeParseError, "Parse error: "+errFrameTooLong{f.max}.Error()); werr != nil {
				return nil, werr
			}
			line = nil
		}
		return line, err
	}
}

// checkFrame returns 0 for a line that is one JSON-RPC 2.0 request,
// notification or response; else the error code and message to answer it
// with, and the id to answer (nil when it has none that can be used).
func checkFrame(line []byte) (code int64, msg string, id json.RawMessage) {
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, "Parse error: not one JSON value", nil
	}
	b := bytes.TrimSpace(line)
	switch b[0] {
	case '{':
	case '[':
		return jsonrpc.CodeInvalidRequest, "Invalid Request: batches are not supported (one JSON-RPC message per line)", nil
	default:
		return jsonrpc.CodeInvalidRequest, "Invalid Request: a JSON-RPC message is an object", nil
	}
	// A map, not a struct: encoding/json matches struct fields without
	// regard to case, the SDK (rightly) does not.
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return jsonrpc.CodeInvalidRequest, "Invalid Request: " + err.Error(), nil
	}
	m := struct{ ID, Method, Params, Result, Error json.RawMessage }{obj["id"], obj["method"], obj["params"], obj["result"], obj["error"]}
	var version string
	_ = json.Unmarshal(obj["jsonrpc"], &version)
	if validID(m.ID) {
		id = m.ID
	}
	switch {
	case version != "2.0":
		return jsonrpc.CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`, id
	case m.ID != nil && !validID(m.ID):
		return jsonrpc.CodeInvalidRequest, "Invalid Request: id must be a string or an integer", nil
	case m.Method != nil:
		var name string
		if json.Unmarshal(m.Method, &name) != nil || name == "" {
			return jsonrpc.CodeInvalidRequest, "Invalid Request: method must be a non-empty string", id
		}
		if p := bytes.TrimSpace(m.Params); len(p) > 0 && p[0] != '{' && p[0] != '[' && !bytes.Equal(p, []byte("null")) {
			return jsonrpc.CodeInvalidRequest, "Invalid Request: params must be an object or an array", id
		}
	case m.ID != nil && (m.Result != nil || m.Error != nil): // a response to a request of the server's
	default:
		return jsonrpc.CodeInvalidRequest, "Invalid Request: neither a request (method) nor a response (result or error)", id
	}
	// Whatever else the SDK's decoder refuses (an error object of the
	// wrong shape, ...) would end the connection too.
	if _, err := jsonrpc.DecodeMessage(b); err != nil {
		return jsonrpc.CodeInvalidRequest, "Invalid Request: a member has the wrong type (result, error, params)", id
	}
	return 0, "", nil
}

// validID reports whether raw is a JSON-RPC id the SDK accepts: a string
// or an integer (absent is checked by the caller).
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if raw == nil || bytes.Equal(raw, []byte("null")) { // null would unmarshal into anything
		return false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return true
	}
	var n int64
	return json.Unmarshal(raw, &n) == nil && !bytes.ContainsAny(raw, ".eE")
}

// lockedWriter serializes writes to w: the SDK's responses and the
// filter's error answers are each one Write of a whole line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close implements io.Closer; the output itself (stdout) is left open.
func (l *lockedWriter) Close() error { return nil }

// reply writes a JSON-RPC error response for id (null when nil).
func (l *lockedWriter) reply(id json.RawMessage, code int64, msg string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	if err != nil {
		return err
	}
	_, err = l.Write(append(b, '\n'))
	return err
}
