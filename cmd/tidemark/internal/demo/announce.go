package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
)

// sendArgs are the arguments of the send command that serve prints after
// --url and --secret, and that the README's tour runs: the contact is not
// in the demo history, so it is applied; an older revision under another
// --id is then stale (cmd/tidemark's readme_test.go walks the tour).
const sendArgs = `--id evt-1 --contact c-1001 --revision 2 --snapshot '{"job_title":"VP Sales"}'`

// Announcement is what Announce prints the demo with.
type Announcement struct {
	Self    string // how to run tidemark, such as "go run ./cmd/tidemark"
	Base    string // the base URL serve answers on
	DataDir string // the embedded database's folder, relative to the working directory
}

// Announce sets the demo up on the embedded database's first start (the
// demo tenant, its standard provider, sample history and a demo admin)
// and prints to out how to use it; ctx carries the actor to audit. The
// demo admin's password and the provider's signing secret are printed at
// that first start only, as the console shows a secret only once; later
// starts print how to set new ones.
func Announce(ctx context.Context, store *postgres.Store, out, errOut io.Writer, a Announcement) error {
	login := fmt.Sprintf("%s (password shown at the first start; to set a new one:\n"+
		"               %s user password --email %s --password-stdin)", Email, a.Self, Email)
	first := false
	if _, err := store.Tenant(ctx, Tenant); err != nil {
		if domain.ErrorCode(err) != domain.ENOTFOUND {
			return err
		}
		first = true
		password, err := Create(ctx, store)
		if err != nil {
			return err
		}
		if password != "" {
			login = fmt.Sprintf("%s / %s   (shown this once: keep it)", Email, password)
		}
		fmt.Fprintln(out, "Filling the demo workspace with eight days of sample history...")
		if err := Seed(ctx, store, out); err != nil {
			return fmt.Errorf("seed demo history: %w", err)
		}
	}
	// Earlier versions kept the password beside the database.
	if err := os.Remove(filepath.Join(a.DataDir, "demo-password")); err == nil {
		fmt.Fprintf(errOut, "removed ./%s/demo-password: the demo password is no longer kept on disk\n", a.DataDir)
	}
	rotate := fmt.Sprintf("%s provider rotate --tenant %s --provider %s", a.Self, Tenant, Provider)
	secret, secretLine := "whsec_...", fmt.Sprintf("shown at the first start; to get a new one (the previous one keeps working):\n"+
		"               %s\n               or rotate it on %s/t/%s/providers/%s", rotate, a.Base, Tenant, Provider)
	if first {
		p, err := store.Endpoint(ctx, Tenant, Provider)
		if err != nil {
			return err
		}
		if len(p.Secrets) == 0 {
			return fmt.Errorf("the demo provider has no secret that decrypts (see the log): %s", rotate)
		}
		secret = p.Secrets[0]
		secretLine = secret + "   (shown this once: keep it)"
	}
	fmt.Fprintf(out, `
Embedded demo (data in ./%s):
  console:     %s/t/%s
  login:       %s
  webhook URL: %s/webhooks/%s/%s
  secret:      %s
  API token:   %s token create --tenant %s
  send a signed test event:
    %s

`, a.DataDir, a.Base, Tenant, login, a.Base, Tenant, Provider, secretLine, a.Self, Tenant,
		SendCommand(a.Self, a.Base, secret))
	return nil
}

// SendCommand is the send command of the tour, on two lines as the
// README shows it.
func SendCommand(self, base, secret string) string {
	return fmt.Sprintf("%s send --url %s/webhooks/%s/%s --secret %s \\\n        %s",
		self, base, Tenant, Provider, secret, sendArgs)
}
