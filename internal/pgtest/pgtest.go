// Package pgtest gives tests a fresh PostgreSQL schema per test, dropped
// when the test ends. The server comes from $HERMESSTATE_PG_DSN; without it
// Postgres tests skip with a message saying how to enable them (they fail
// instead when $CI is set), and with it an unreachable server fails the test
// (.ci/run sets both).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN is the environment variable naming the test server.
const EnvDSN = "HERMESSTATE_PG_DSN"

// Hint says how to enable the PostgreSQL tests.
const Hint = "PostgreSQL tests are disabled: set " + EnvDSN + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable (a server where that user may create schemas) to run them"

// DSN returns the test server's DSN, skipping t when none is configured
// and failing it when the server does not answer.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := strings.TrimSpace(os.Getenv(EnvDSN))
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but " + EnvDSN + " is not: CI runs the PostgreSQL tests (.ci/run starts a server and sets it)")
		}
		t.Skip(Hint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("%s is set but the server is unreachable: %v", EnvDSN, err)
	}
	_ = c.Close(ctx)
	return dsn
}

// NewSchemaName returns a fresh schema name with the given prefix.
func NewSchemaName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// Schema returns the DSN and the name of a fresh schema (not created: the
// store creates it at Open), dropped with everything in it when t ends.
func Schema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = DSN(t)
	schema = NewSchemaName("hs_test")
	t.Cleanup(func() { Drop(t, dsn, schema) })
	return dsn, schema
}

// Drop drops schema (CASCADE) if it exists.
func Drop(t testing.TB, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}

// Exec runs statements on a plain connection to dsn, failing t on error.
func Exec(t testing.TB, dsn string, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// QueryInt runs q (one row, one integer column) on a plain connection.
func QueryInt(t testing.TB, dsn, q string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// EnvReplicaDSN names a streaming hot standby of the test server (same
// database), for the read-replica tests.
const EnvReplicaDSN = "HERMESSTATE_PG_REPLICA_DSN"

// ReplicaDSN returns the standby's DSN, skipping t when none is configured
// (failing under $CI, where .ci/run starts one) and failing it when the
// server there is not a standby.
func ReplicaDSN(t testing.TB) string {
	t.Helper()
	dsn := strings.TrimSpace(os.Getenv(EnvReplicaDSN))
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but " + EnvReplicaDSN + " is not: CI runs the read-replica tests (.ci/run starts a standby with .ci/pg-replica.sh and sets it)")
		}
		t.Skip("read-replica tests are disabled: start a standby with `bash .ci/pg-replica.sh` and set " + EnvReplicaDSN + " to the DSN it prints")
	}
	if QueryInt(t, dsn, "SELECT CASE WHEN pg_is_in_recovery() THEN 1 ELSE 0 END") != 1 {
		t.Fatalf("%s is set but %s is not a hot standby", EnvReplicaDSN, dsn)
	}
	return dsn
}
