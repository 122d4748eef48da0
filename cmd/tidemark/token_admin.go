package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
)

// adminTokenCreate creates an admin API token answering for the admin
// operator nt names, and prints it once, as tenant tokens are printed.
// The CLI acts with the database's authority and has no operator of its
// own: --by names the admin whose flag the token lives by.
func (e cliEnv) adminTokenCreate(ctx context.Context, nt domain.NewAdminToken, expiry string) error {
	return e.withStore(ctx, func(s cliStore) error {
		token, err := s.CreateAdminToken(ctx, nt)
		if err != nil {
			return cliError(err)
		}
		fmt.Fprintf(e.stdout, "admin API token for /api/v1/admin/..., answering for admin %s, %s (shown once):\n%s\n",
			domain.NormalizeEmail(nt.CreatorEmail), expiry, token)
		return nil
	})
}

// tokenListFlags declares token list's flags.
func tokenListFlags(fs *flag.FlagSet) (admin *bool) {
	return fs.Bool("admin", false, "list the admin API tokens (required: a tenant's tokens are listed on its console's API tokens page)")
}

func (e cliEnv) tokenList(ctx context.Context, args []string) error {
	fs := e.flags("token list")
	admin := tokenListFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if !*admin {
		fs.Usage()
		return fmt.Errorf("token list: --admin is required; a tenant's tokens are listed on its console's API tokens page")
	}
	return e.withStore(ctx, func(s cliStore) error {
		tokens, err := s.AdminTokens(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tADMIN\tSTATUS\tCREATED\tEXPIRES\tLAST USED")
		for _, t := range tokens {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Creator, adminTokenStatus(t),
				listTime(t.CreatedAt, ""), listTime(t.ExpiresAt, "never"), listTime(t.LastUsedAt, "never"))
		}
		return w.Flush()
	})
}

// adminTokenStatus says whether t works and, when not, why.
func adminTokenStatus(t domain.AdminToken) string {
	switch {
	case t.Works:
		return "works"
	case !t.RevokedAt.IsZero():
		return "revoked"
	case !t.ExpiresAt.IsZero() && !t.ExpiresAt.After(time.Now()):
		return "expired"
	}
	return "creator-not-admin"
}

// listTime is t as a list shows it, or none when t is zero.
func listTime(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// tokenRevokeFlags declares token revoke's flags.
func tokenRevokeFlags(fs *flag.FlagSet) (admin *bool, id *int64) {
	return fs.Bool("admin", false, "revoke an admin API token (required: a tenant's tokens are revoked on its console's API tokens page)"),
		fs.Int64("id", 0, "the token's id, as token list --admin shows it (required)")
}

func (e cliEnv) tokenRevoke(ctx context.Context, args []string) error {
	fs := e.flags("token revoke")
	admin, id := tokenRevokeFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if !*admin || *id <= 0 {
		fs.Usage()
		return fmt.Errorf("token revoke: --admin and --id are required; a tenant's tokens are revoked on its console's API tokens page")
	}
	return e.withStore(ctx, func(s cliStore) error {
		if err := s.RevokeAdminToken(ctx, *id); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "admin token %d is revoked\n", *id)
		return nil
	})
}
