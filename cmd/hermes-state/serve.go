package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/web"
)

func serveCmd(a *app) *cobra.Command {
	var listen string
	var allowWrite bool
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve a local web page over the store: sessions, search as you type, conversations, usage charts",
		Long: `Serve a web page over the store on a loopback address and print its URL
(http://127.0.0.1:PORT/, a free port unless --listen names one). The page lists
sessions by last activity, searches as you type (the CLI's ranking, the hits
marked), shows a conversation with the same message ids as the CLI and MCP
(a hit opens /s/ID#m123, scrolled to that message), and draws usage charts
from the numbers 'stats' prints.

The store is opened read-only: a Hermes file is read as it is, never changed.
With --allow-write the page also offers the CLI's safe edits of a session (its
title, archiving); each opens the store writable for that one write, by a POST
carrying a token this process makes, and is refused on a file
'hermes-state migrate' has not upgraded yet.

The page has no login. It listens only on loopback (127.0.0.1, ::1,
localhost) unless --listen names another address, which is allowed with a
warning: anyone who can reach that address can then read every conversation.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			_, _, err := listenAddr(listen)
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			addr, loopback, err := listenAddr(listen)
			if err != nil {
				return err
			}
			st, err := a.openRead(ctx)
			if err != nil {
				return err
			}
			var logger *slog.Logger
			if a.verbose {
				logger = slog.New(slog.NewTextHandler(a.errOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			opt := web.Options{Store: st, Location: st.Location(), Logger: logger}
			if allowWrite {
				opt.Edits = &storeEdits{a: a, st: st}
			}
			srv, err := web.New(opt)
			if err != nil {
				return err
			}
			if !loopback {
				fmt.Fprintf(a.errOut, "hermes-state serve: warning: --listen %s is not a loopback address: the page has no login, so anyone who can reach it can read every conversation in %s\n", addr, st.Location())
			}
			a.serving = true
			return serveHTTP(ctx, srv, addr, func(bound net.Addr) {
				mode := "read-only"
				if allowWrite {
					mode = "titles and archiving writable (--allow-write)"
				}
				fmt.Fprintf(a.out, "http://%s/\n", bound)
				fmt.Fprintf(a.errOut, "hermes-state serve: %s, %s, at http://%s/ (Ctrl-C stops)\n", st.Location(), mode, bound)
			})
		},
	}
	c.Flags().StringVar(&listen, "listen", "", "address to listen on, host:port (default 127.0.0.1 on a free port); a non-loopback address is served with a warning")
	c.Flags().BoolVar(&allowWrite, "allow-write", false, "offer the safe edits of a session (title, archive) by POST with a per-process token")
	return c
}

// listenAddr returns the address to listen on and whether it is loopback
// only. "" is 127.0.0.1 on a free port; "localhost" is 127.0.0.1. A value
// that is not host:port is a usage error (ErrInvalid).
func listenAddr(v string) (string, bool, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "127.0.0.1:0", true, nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", false, invalidf("--listen %q is not host:port (for example 127.0.0.1:8080, or 0.0.0.0:8080 to serve other machines)", v)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	if host == "" {
		return net.JoinHostPort(host, port), false, nil // every address
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return "", false, invalidf("--listen %q: give an IP address (127.0.0.1, ::1, or an address of this machine), not a name", v)
	}
	return net.JoinHostPort(host, port), ip.IsLoopback(), nil
}

// serveHTTP serves h on addr until ctx ends; ready gets the bound address.
func serveHTTP(ctx context.Context, h http.Handler, addr string, ready func(net.Addr)) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w (give another --listen address or port)", addr, err)
	}
	hsrv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	ready(ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hsrv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hsrv.Shutdown(sctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// storeEdits are the page's writes: each opens the store writable for that
// one write (the page itself reads through the read-only store), as
// browse's title does, and is refused on a file hermes-state has not
// upgraded.
type storeEdits struct {
	a  *app
	st *hs.Store
}

func (e *storeEdits) write(ctx context.Context, fn func(w *hs.Store) error) error {
	pending, err := e.st.MigrationsPending(ctx)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return fmt.Errorf("%s is read as it is and has not been upgraded by hermes-state: run 'hermes-state migrate' before editing it here: %w", e.st.Location(), hs.ErrInvalid)
	}
	cfg := e.a.config()
	cfg.ReadOnly, cfg.MustExist = false, true
	w, err := hs.Open(ctx, cfg)
	if err != nil {
		return err
	}
	err = fn(w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

func (e *storeEdits) SetTitle(ctx context.Context, id, title string) error {
	return e.write(ctx, func(w *hs.Store) error {
		_, err := w.Titles().Set(ctx, id, title)
		return err
	})
}

func (e *storeEdits) SetArchived(ctx context.Context, id string, on bool) error {
	return e.write(ctx, func(w *hs.Store) error {
		_, err := w.Lineage().SetArchived(ctx, id, on)
		return err
	})
}
