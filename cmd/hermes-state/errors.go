package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/errtext"
)

// Exit statuses (README, "CLI"): 0 success, 1 other failure, 2 usage or
// invalid input, 3 not found, 4 conflict, 5 busy, 6 corrupt.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3
	exitConflict = 4
	exitBusy     = 5
	exitCorrupt  = 6
)

// exitCode maps an error to the exit status.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, hs.ErrInvalid):
		return exitUsage
	case errors.Is(err, hs.ErrNotFound):
		return exitNotFound
	case errors.Is(err, hs.ErrConflict):
		return exitConflict
	case errors.Is(err, hs.ErrBusy):
		return exitBusy
	case errors.Is(err, hs.ErrCorrupt):
		return exitCorrupt
	}
	return exitFailure
}

// usageError is a command line the CLI cannot run: an unknown command or
// flag, a missing or extra argument, a flag value out of range. It exits 2
// (errors.Is ErrInvalid) and its message is printed whole (cobra's "Did you
// mean this?" lines included) with a pointer to the command's help.
type usageError struct {
	msg     string
	command string // "hermes-state sessions show"
}

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == hs.ErrInvalid }

// usagef is a usage error of cmd.
func usagef(cmd *cobra.Command, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), command: cmd.CommandPath()}
}

// invalidf is input the CLI refuses before doing anything (exit 2), said in
// the user's terms.
func invalidf(format string, args ...any) error {
	return &hs.Error{Kind: hs.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// failf is a failure of kind (exit status by kind) with a message for
// people.
func failf(kind error, format string, args ...any) error {
	return &hs.Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// groupArgs refuses an unknown subcommand of a command group, with cobra's
// suggestions ("Did you mean this?") for a near miss.
func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default for the root
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return usagef(cmd, "%s", msg)
}

// showHelp is the RunE of a command group: alone, it prints its help.
func showHelp(cmd *cobra.Command, _ []string) error { return cmd.Help() }

// usageErrors makes every command line error of the tree below root a
// usage error (exit 2): flag errors, argument count errors, unknown
// subcommands.
func usageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usagef(cmd, "%s", err.Error())
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.HasSubCommands():
			c.Args = groupArgs
			if c.RunE == nil && c.Run == nil {
				c.RunE = showHelp
			}
		case c.Args != nil:
			check := c.Args
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := check(cmd, args); err != nil {
					return usagef(cmd, "%s\nUsage: %s", err.Error(), cmd.UseLine())
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// errorText is what the CLI prints for err (after "hermes-state: "): the
// message in the user's terms, without the library's operation names
// ("lineage.resolve_id: not found: ..."); a usage error whole, with where
// to find the help; a failure of the store itself names the store.
func (a *app) errorText(err error) string {
	var ue *usageError
	if errors.As(err, &ue) {
		return strings.TrimRight(ue.msg, "\n") + "\nSee '" + ue.command + " --help'."
	}
	s := errtext.FirstLine(err)
	if storeFailure(err) && !a.elsewhere && !strings.Contains(s, a.location()) {
		s = a.location() + ": " + s
	}
	return s
}

// storeFailure reports whether err is a failure of the store itself (busy,
// damaged, closed, storage), whose message should say which store.
func storeFailure(err error) bool {
	for _, k := range []error{hs.ErrBusy, hs.ErrCorrupt, hs.ErrStorage, hs.ErrClosed} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
