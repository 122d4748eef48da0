package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/demo"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
)

// demoSendArgs are the arguments of the send command that serve prints
// after --url and --secret, and that the README's tour runs: the contact is
// not in the demo history, so it is applied; an older revision under
// another --id is then stale (readme_test.go walks the tour).
const demoSendArgs = `--id evt-1 --contact c-1001 --revision 2 --snapshot '{"job_title":"VP Sales"}'`

// announceDemo sets the demo up on the embedded database's first start
// (the demo tenant, its standard provider, sample history and a demo admin)
// and prints how to use it. The demo admin's password and the provider's
// signing secret are printed at that first start only, as the console
// shows a secret only once; later starts print how to set new ones.
func (e cliEnv) announceDemo(ctx context.Context, store *postgres.Store, base string) error {
	self := selfCommand()
	login := fmt.Sprintf("%s (password shown at the first start; to set a new one:\n"+
		"               %s user password --email %s --password-stdin)", demo.Email, self, demo.Email)
	ctx = domain.WithActor(ctx, cliActor(e.getenv))
	first := false
	if _, err := store.Tenant(ctx, demo.Tenant); err != nil {
		if domain.ErrorCode(err) != domain.ENOTFOUND {
			return err
		}
		first = true
		password, err := demo.Create(ctx, store)
		if err != nil {
			return err
		}
		if password != "" {
			login = fmt.Sprintf("%s / %s   (shown this once: keep it)", demo.Email, password)
		}
		fmt.Fprintln(e.stdout, "Filling the demo workspace with eight days of sample history...")
		if err := demo.Seed(ctx, store, e.stdout); err != nil {
			return fmt.Errorf("seed demo history: %w", err)
		}
	}
	// Earlier versions kept the password beside the database.
	if err := os.Remove(filepath.Join(dataDir, "demo-password")); err == nil {
		fmt.Fprintf(e.stderr, "removed ./%s/demo-password: the demo password is no longer kept on disk\n", dataDir)
	}
	rotate := fmt.Sprintf("%s provider rotate --tenant %s --name %s", self, demo.Tenant, demo.Provider)
	secret, secretLine := "whsec_...", fmt.Sprintf("shown at the first start; to get a new one (the previous one keeps working):\n"+
		"               %s\n               or rotate it on %s/t/%s/providers/%s", rotate, base, demo.Tenant, demo.Provider)
	if first {
		p, err := store.Endpoint(ctx, demo.Tenant, demo.Provider)
		if err != nil {
			return err
		}
		if len(p.Secrets) == 0 {
			return fmt.Errorf("the demo provider has no secret that decrypts (see the log): %s", rotate)
		}
		secret = p.Secrets[0]
		secretLine = secret + "   (shown this once: keep it)"
	}
	fmt.Fprintf(e.stdout, `
Embedded demo (data in ./%s):
  console:     %s/t/%s
  login:       %s
  webhook URL: %s/webhooks/%s/%s
  secret:      %s
  API token:   %s token create --tenant %s
  send a signed test event:
    %s

`, dataDir, base, demo.Tenant, login, base, demo.Tenant, demo.Provider, secretLine, self, demo.Tenant,
		demoSendCommand(self, base, secret))
	return nil
}

// demoSendCommand is the send command of the tour, on two lines as the
// README shows it.
func demoSendCommand(self, base, secret string) string {
	return fmt.Sprintf("%s send --url %s/webhooks/%s/%s --secret %s \\\n        %s",
		self, base, demo.Tenant, demo.Provider, secret, demoSendArgs)
}
