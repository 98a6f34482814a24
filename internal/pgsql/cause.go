package pgsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// closedConn is what a PostgreSQL failure says when the server ended the
// session or the connection broke.
const closedConn = "the database server closed the connection"

// Cause names what a PostgreSQL or connection error means in words a user
// acts on ("the database server closed the connection", "connection
// refused", "disk full on the database server", "permission denied"), or
// returns "" when err carries no cause it knows. It never returns SQL text
// or the DSN.
func Cause(err error) string {
	if err == nil {
		return ""
	}
	switch code := Code(err); {
	case code == "57P01":
		return closedConn + " (terminated by an administrator)"
	case code == "57P02":
		return closedConn + " (the server crashed)"
	case code == "57P03":
		return "the database server is not accepting connections now (starting up or shutting down)"
	case code == "53100":
		return "disk full on the database server"
	case code == "53200":
		return "the database server is out of memory"
	case code == TooManyConnections:
		return "the database server has too many connections"
	case code == "42501":
		return "permission denied (the database user lacks a privilege)"
	case code == "25006":
		return "the database is read-only (a read-only transaction, or a standby server)"
	case code == "3D000":
		return "the database does not exist"
	case code == "3F000":
		return "the schema does not exist"
	case strings.HasPrefix(code, "28"):
		return "the database server refused the login (authentication failed)"
	case strings.HasPrefix(code, "08"):
		return closedConn
	case strings.HasPrefix(code, "58"), code == "XX001", code == "XX002":
		return "the database server met an I/O error or damaged data"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return "cannot connect to the database server: " + netCause(err)
	}
	if pgconn.Timeout(err) {
		return "the connection to the database server timed out"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		strings.Contains(err.Error(), "conn closed") {
		return closedConn
	}
	return ""
}

// netCause says why a connection could not be made.
func netCause(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (is the server running at that address and port?)"
	case errors.As(err, &dnsErr):
		return "unknown host"
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return "timed out"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if c := Cause(pe); c != "" {
			return c
		}
		return pe.Message
	}
	return "the server did not answer"
}
