// Package tenantcmd is the tidemark tenant commands of a workspace's
// lifecycle (docs/contract/cli.md): list, rename, archive, unarchive and
// delete. tenant create and update are package main's.
package tenantcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
)

// Store is what the commands read and change.
type Store interface {
	Tenant(ctx context.Context, slug string) (domain.Tenant, error)
	domain.TenantLifecycle
}

// Env is what the commands use of the tidemark command's environment.
type Env struct {
	Stdout io.Writer
	// Flags is the FlagSet of the command named.
	Flags func(name string) *flag.FlagSet
	// WithStore runs fn on the database's store.
	WithStore func(ctx context.Context, fn func(Store) error) error
}

// parseSlug parses a command's flags and its SLUG, before the flags or
// after, as tenant create does.
func parseSlug(fs *flag.FlagSet, args []string) (string, error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		_, err := cli.Parse(fs, args[1:], 0)
		return args[0], err
	}
	pos, err := cli.Parse(fs, args, 1)
	if err != nil {
		return "", err
	}
	return pos[0], nil
}

// NoFlags declares nothing, for the commands that take only a SLUG.
func NoFlags(*flag.FlagSet) {}

// List is tidemark tenant list: every tenant, one line each, the slug
// first, archived ones too.
func List(ctx context.Context, e Env, args []string) error {
	if _, err := cli.Parse(e.Flags("tenant list"), args, 0); err != nil {
		return err
	}
	return e.WithStore(ctx, func(s Store) error {
		ts, err := s.Tenants(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "SLUG\tNAME\tSTATUS\tCREATED")
		for _, t := range ts {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Slug, t.Name, t.Status(), t.CreatedAt.UTC().Format(time.RFC3339))
		}
		return w.Flush()
	})
}

// RenameFlags declares tenant rename's flags.
func RenameFlags(fs *flag.FlagSet) (name *string) {
	return fs.String("name", "", "the new display name (required); the slug stays")
}

// Rename is tidemark tenant rename.
func Rename(ctx context.Context, e Env, args []string) error {
	fs := e.Flags("tenant rename")
	name := RenameFlags(fs)
	if len(args) == 0 {
		return domain.Errorf(domain.EINVALID, "tenant rename: SLUG and --name NAME are required")
	}
	slug, err := parseSlug(fs, args)
	if err != nil {
		return err
	}
	if *name == "" {
		return domain.Errorf(domain.EINVALID, "tenant rename: --name NAME is required")
	}
	return e.WithStore(ctx, func(s Store) error {
		t, err := s.RenameTenant(ctx, slug, strings.TrimSpace(*name))
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "renamed tenant %s: %s\n", t.Slug, t.Name)
		return nil
	})
}

// Archive is tidemark tenant archive, or unarchive when archive is false.
func Archive(archive bool) func(context.Context, Env, []string) error {
	name := map[bool]string{true: "tenant archive", false: "tenant unarchive"}[archive]
	return func(ctx context.Context, e Env, args []string) error {
		slug, err := parseSlug(e.Flags(name), args)
		if err != nil {
			return err
		}
		return e.WithStore(ctx, func(s Store) error {
			if archive {
				if _, err := s.ArchiveTenant(ctx, slug); err != nil {
					return err
				}
				fmt.Fprintf(e.Stdout, "archived tenant %s: its webhooks and API answer 404; its data is kept\n", slug)
				return nil
			}
			if _, err := s.UnarchiveTenant(ctx, slug); err != nil {
				return err
			}
			fmt.Fprintf(e.Stdout, "unarchived tenant %s\n", slug)
			return nil
		})
	}
}

// DeleteFlags declares tenant delete's flags.
func DeleteFlags(fs *flag.FlagSet) (confirm *bool) {
	return fs.Bool("confirm", false, "erase the tenant and all its data; without it, print what would be erased and refuse")
}

// Delete is tidemark tenant delete: without --confirm it prints what would
// be erased and refuses.
func Delete(ctx context.Context, e Env, args []string) error {
	fs := e.Flags("tenant delete")
	confirm := DeleteFlags(fs)
	slug, err := parseSlug(fs, args)
	if err != nil {
		return err
	}
	return e.WithStore(ctx, func(s Store) error {
		if !*confirm {
			t, err := s.Tenant(ctx, slug)
			if err != nil {
				return err
			}
			rows, err := s.TenantRows(ctx, slug)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.Stdout, "tenant %s (%s, %s) would be deleted with %s\n", t.Slug, t.Name, t.Status(), describe(rows))
			printRows(e.Stdout, rows)
			return domain.Errorf(domain.EINVALID, "tenant delete: nothing deleted; run again with --confirm to erase tenant %s", slug)
		}
		rows, err := s.DeleteTenant(ctx, slug)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "deleted tenant %s: %s erased (the audit log is kept)\n", slug, describe(rows))
		printRows(e.Stdout, rows)
		return nil
	})
}

// describe says how many rows in how many tables.
func describe(rows []domain.TableRows) string {
	var n int64
	for _, r := range rows {
		n += r.Rows
	}
	return fmt.Sprintf("%d rows in %d tables", n, len(rows))
}

// printRows prints a table's rows a line, indented.
func printRows(w io.Writer, rows []domain.TableRows) {
	for _, r := range rows {
		fmt.Fprintf(w, "  %s %d\n", r.Table, r.Rows)
	}
}
