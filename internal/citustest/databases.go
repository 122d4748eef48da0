package citustest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Databases beside the cluster's own: each Citus database is a cluster of
// its own, made of the databases of that name on every node, so each of
// these runs on all nodes.

// CreateDatabase creates database name on every node with the citus
// extension and registers the workers in it, as New does for "tidemark".
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	err := c.onEveryNode(func(n *node) error {
		if err := n.exec(ctx, "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return err
		}
		return n.exec(ctx, name, "CREATE EXTENSION citus")
	})
	if err != nil {
		return err
	}
	return c.register(ctx, name)
}

// CloneDatabase creates database name as a copy of template on every node:
// shards, metadata and all, which is a cluster ready to use. The template
// must have been frozen (FreezeTemplate).
func (c *Cluster) CloneDatabase(ctx context.Context, name, template string) error {
	return c.onEveryNode(func(n *node) error {
		return n.exec(ctx, "postgres", fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
			pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize()))
	})
}

// FreezeTemplate closes database name to connections on every node and
// ends the ones it has (Citus' maintenance daemons and the nodes' own
// connections to one another), since PostgreSQL copies only a database
// nobody is connected to.
func (c *Cluster) FreezeTemplate(ctx context.Context, name string) error {
	if err := c.onEveryNode(func(n *node) error {
		return n.exec(ctx, "postgres", fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS false", pgx.Identifier{name}.Sanitize()))
	}); err != nil {
		return err
	}
	return c.onEveryNode(func(n *node) error {
		return n.exec(ctx, "postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+name+"' AND pid <> pg_backend_pid()")
	})
}

// DropDatabase drops database name on every node.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	return c.onEveryNode(func(n *node) error {
		return n.exec(ctx, "postgres", fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", pgx.Identifier{name}.Sanitize()))
	})
}

// DatabaseURL is database name on the coordinator.
func (c *Cluster) DatabaseURL(name string) string { return c.coordinator.url(name) }

func (c *Cluster) onEveryNode(fn func(*node) error) error {
	nodes := append([]*node{c.coordinator}, c.workers...)
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = fn(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// exec runs one statement in database db of n.
func (n *node) exec(ctx context.Context, db, sql string) error {
	conn, err := pgx.Connect(ctx, n.url(db))
	if err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %s: %w", n.name, sql, err)
	}
	return nil
}
