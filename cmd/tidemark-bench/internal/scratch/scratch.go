// Package scratch creates the databases a benchmark measures on, on a
// PostgreSQL server or a Citus cluster's coordinator, and drops them all
// at the end.
package scratch

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Databases creates databases and drops them all at Close.
type Databases struct {
	admin     *pgx.Conn // creates and drops them, and runs CHECKPOINT
	serverURL string
	keep      bool
	log       io.Writer
	names     []string
	cluster   Cluster // nil on a plain server
}

// Cluster creates and drops databases on every node of a Citus cluster
// (internal/citustest), where CREATE DATABASE on the coordinator alone
// would leave the workers without one.
type Cluster interface {
	CreateDatabase(ctx context.Context, name string) error
	DropDatabase(ctx context.Context, name string) error
	URL() string
}

// Open opens the one maintenance connection that creates and drops the
// scratch databases on serverURL. With keep, Close leaves them in place
// and says where they are.
func Open(ctx context.Context, serverURL string, keep bool, log io.Writer) (*Databases, error) {
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return nil, fmt.Errorf("connect to --server-url: %w", err)
	}
	return &Databases{admin: admin, serverURL: serverURL, keep: keep, log: log}, nil
}

// OnCluster is Open on a Citus cluster's coordinator.
func OnCluster(ctx context.Context, c Cluster, keep bool, log io.Writer) (*Databases, error) {
	s, err := Open(ctx, c.URL(), keep, log)
	if s != nil {
		s.cluster = c
	}
	return s, err
}

// OnCitus reports whether the databases are on a Citus cluster.
func (s *Databases) OnCitus() bool { return s.cluster != nil }

// Close drops the scratch databases (unless kept) and the connection.
func (s *Databases) Close(ctx context.Context) {
	s.dropAll(ctx)
	s.admin.Close(context.WithoutCancel(ctx))
}

// Name is a new name for a run's scratch databases, which its commands
// suffix: when and a random part, so runs never collide.
func Name(random string) string {
	return fmt.Sprintf("tidemark_bench_%d_%s", time.Now().Unix(), random)
}

// Create creates database name and returns its URL.
func (s *Databases) Create(ctx context.Context, name string) (string, error) {
	var err error
	if s.cluster != nil {
		err = s.cluster.CreateDatabase(ctx, name)
	} else {
		_, err = s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	}
	if err != nil {
		return "", fmt.Errorf("create scratch database %s: %w", name, err)
	}
	s.names = append(s.names, name)
	return URL(s.serverURL, name)
}

// dropAll runs even after an interrupt, so it uses a context of its own.
func (s *Databases) dropAll(ctx context.Context) {
	if s.keep {
		for _, name := range s.names {
			url, _ := URL(s.serverURL, name)
			fmt.Fprintf(s.log, "kept scratch database %s (%s)\n", name, url)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, name := range s.names {
		var err error
		if s.cluster != nil {
			err = s.cluster.DropDatabase(ctx, name)
		} else {
			// FORCE ends connections a killed child may have left behind.
			_, err = s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		}
		if err != nil {
			fmt.Fprintf(s.log, "could not drop scratch database %s: %v\n", name, err)
		}
	}
}

// Exists reports whether database name is on the server.
func (s *Databases) Exists(ctx context.Context, name string) (bool, error) {
	var exists bool
	err := s.admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	return exists, err
}

// URL points a connection string at another database on the same server,
// in URL or keyword/value form.
func URL(serverURL, name string) (string, error) {
	if strings.HasPrefix(serverURL, "postgres://") || strings.HasPrefix(serverURL, "postgresql://") {
		u, err := url.Parse(serverURL)
		if err != nil {
			return "", fmt.Errorf("--server-url: %w", err)
		}
		q := u.Query()
		if q.Has("dbname") {
			q.Set("dbname", name)
			u.RawQuery = q.Encode()
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	// In keyword/value form a later keyword overrides an earlier one.
	return strings.TrimSpace(serverURL) + " dbname=" + name, nil
}

// Checkpoint flushes dirty buffers before a measurement so it does not pay
// for the previous one's writes. Best effort: it needs pg_checkpoint rights.
func (s *Databases) Checkpoint(ctx context.Context) {
	s.admin.Exec(ctx, "CHECKPOINT")
}
