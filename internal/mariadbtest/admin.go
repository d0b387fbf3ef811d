package mariadbtest

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Admin returns a connection pool to the server as root over its Unix
// socket (mariadb-install-db leaves root without a password).
func (s *Server) Admin() (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", s.socket()
	cfg.Timeout = 10 * time.Second
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mariadb admin: %w", err)
	}
	return sql.OpenDB(c), nil
}

// setUp makes the clients' account.
func (s *Server) setUp(ctx context.Context, cfg Config) error {
	db, err := s.Admin()
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", User, Password),
		fmt.Sprintf("GRANT ALL ON *.* TO '%s'@'%%' WITH GRANT OPTION", User),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("set up: %s: %w", q, err)
		}
	}
	return nil
}

// CreateDatabase creates a database and returns its name, "replay_" and a
// random suffix.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	db, err := s.Admin()
	if err != nil {
		return "", err
	}
	defer db.Close()
	name := "replay_" + randomSuffix()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return name, nil
}

// LogEntry is one command in the server's general log.
type LogEntry struct {
	// Thread is the server's connection id; Command the command's name
	// ("Query", "Prepare", "Execute", "Close stmt", "Init DB", "Connect",
	// "Quit", …); Argument its text (for Execute, the statement with its
	// parameters written in).
	Thread   int64
	Command  string
	Argument string
}

// GeneralLog returns the general log's entries of the clients' account
// (Config.GeneralLog must be on), oldest first, and empties the log.
func (s *Server) GeneralLog(ctx context.Context) ([]LogEntry, error) {
	db, err := s.Admin()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, "SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log WHERE user_host LIKE ? ORDER BY event_time", User+"[%")
	if err != nil {
		return nil, fmt.Errorf("general log: %w", err)
	}
	defer rows.Close()
	var out []LogEntry
	for rows.Next() {
		var e LogEntry
		if err := rows.Scan(&e.Thread, &e.Command, &e.Argument); err != nil {
			return nil, fmt.Errorf("general log: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("general log: %w", err)
	}
	if _, err := db.ExecContext(ctx, "TRUNCATE mysql.general_log"); err != nil {
		return nil, fmt.Errorf("general log: %w", err)
	}
	return out, nil
}
