package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	hs "github.com/hermesstate/hermesstate"
)

// ServeStdio serves srv on standard input and output until the client
// closes the connection or ctx ends (see ServeIO).
func ServeStdio(ctx context.Context, srv *mcp.Server) error {
	return ServeIO(ctx, srv, os.Stdin, os.Stdout)
}

// ServeIO serves srv over newline-delimited JSON-RPC read from r and
// written to w, as the stdio transport does, until r ends or ctx does. A
// frame the SDK's transport would stop on (not JSON, a batch, not a
// JSON-RPC 2.0 message) is answered here with JSON-RPC's parse error
// (-32700) or invalid request (-32600) and the server goes on serving
// (frames.go). It returns nil when the client hung up or ctx was
// cancelled, else the transport's error.
func ServeIO(ctx context.Context, srv *mcp.Server, r io.Reader, w io.Writer) error {
	out := &lockedWriter{w: w}
	in := &frameFilter{src: bufio.NewReaderSize(r, 64<<10), out: out, max: mcp.DefaultMaxLineLength}
	err := srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// LoopbackAddr checks that addr (host:port) names a loopback address and
// returns it with "localhost" replaced by 127.0.0.1. It returns an error
// wrapping hermesstate.ErrInvalid for any other address: the server has no
// authentication, so it must not be reachable from other machines.
func LoopbackAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(addr))
	if err != nil {
		return "", fmt.Errorf("--http %q is not a loopback host:port such as 127.0.0.1:8765 (%w)", addr, hs.ErrInvalid)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("--http %q: the server has no authentication and listens only on a loopback address (127.0.0.1, ::1 or localhost) (%w)", addr, hs.ErrInvalid)
	}
	return net.JoinHostPort(host, port), nil
}

// HTTPHandler returns the streamable HTTP handler of srv, at any path. It
// refuses requests whose Host header is not a loopback name (DNS
// rebinding) and cross-origin browser requests.
func HTTPHandler(srv *mcp.Server) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return http.NewCrossOriginProtection().Handler(h)
}

// ServeHTTP serves srv over streamable HTTP on the loopback address addr
// until ctx ends. ready, when not nil, is called with the address
// listened on (useful with port 0) before requests are served. It returns
// an error wrapping hermesstate.ErrInvalid for a non-loopback address, the
// listener's error when the port cannot be had, and nil after ctx ends.
func ServeHTTP(ctx context.Context, srv *mcp.Server, addr string, ready func(net.Addr)) error {
	addr, err := LoopbackAddr(addr)
	if err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	hsrv := &http.Server{Handler: HTTPHandler(srv), ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- hsrv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hsrv.Shutdown(sctx)
		<-done
		return nil
	}
}
