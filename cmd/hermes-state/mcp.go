package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
)

func mcpCmd(a *app) *cobra.Command {
	var httpAddr string
	var allowWrite bool
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the store to AI clients as a Model Context Protocol server (stdio, or --http on loopback)",
		Long: `Serve the store as a Model Context Protocol server: tools search_sessions,
list_sessions, get_conversation, get_message, get_session and get_usage_stats,
and the resource hermes-session://ID (recent sessions in resources/list, ids
completed). With --allow-write, also set_title and append_note.

By default it speaks MCP on stdin/stdout (what MCP clients start). With
--http ADDR it serves streamable HTTP on a loopback address instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if httpAddr != "" {
				if _, err := mcpserver.LoopbackAddr(httpAddr); err != nil {
					return err
				}
			}
			st, err := a.openMCP(ctx, allowWrite)
			if err != nil {
				return err
			}
			var logger *slog.Logger
			if a.verbose {
				logger = slog.New(slog.NewTextHandler(a.errOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			srv := mcpserver.New(st, mcpserver.Options{AllowWrite: allowWrite, Logger: logger})
			a.serving = true
			if httpAddr == "" {
				return mcpserver.ServeStdio(ctx, srv)
			}
			return mcpserver.ServeHTTP(ctx, srv, httpAddr, func(addr net.Addr) {
				fmt.Fprintf(a.errOut, "hermes-state mcp: serving %s on http://%s/ (Ctrl-C stops)\n", st.Location(), addr)
			})
		},
	}
	c.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on this loopback address (e.g. 127.0.0.1:8765) instead of stdio")
	c.Flags().BoolVar(&allowWrite, "allow-write", false, "add the tools that write: set_title and append_note")
	return c
}

// openMCP opens the store the mcp server serves: read-only (like every
// read command: no migration, no journal-mode switch, no chmod) unless
// --allow-write asked for the tools that write.
func (a *app) openMCP(ctx context.Context, allowWrite bool) (*hs.Store, error) {
	if allowWrite {
		return a.open(ctx)
	}
	return a.openRead(ctx)
}
