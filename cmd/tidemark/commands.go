package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// command is one tidemark command. Its flags are declared by one function,
// which both its runner and the help call: flags declares them on a FlagSet
// for the help, and run's runner declares them through the same function
// to read them.
type command struct {
	name     string   // as typed: "serve", "provider create"
	args     string   // positional arguments, such as "SLUG"
	required []string // flags it does not run without, named first and without brackets
	summary  string   // one line of tidemark --help
	about    string   // what tidemark COMMAND --help says below its synopsis
	flags    func(cliEnv, *flag.FlagSet)
	run      func(cliEnv, context.Context, []string) error
}

// commands is every command, in the order the help lists them.
func commands() []command {
	return []command{
		{name: "serve", summary: "Run the webhook receiver, the JSON API and the console.",
			about: "Run the webhook receiver, the JSON API and the console. Applies migrations at start\n" +
				"and runs the cleanup job every hour, the reconciliation every night and bulk replay\n" +
				"jobs. Without DATABASE_URL it starts an embedded PostgreSQL under ./.tidemark with a\n" +
				"demo tenant, and listens on loopback only unless --allow-remote is given.",
			flags: func(e cliEnv, fs *flag.FlagSet) { e.serveFlags(fs) }, run: cliEnv.serve},
		{name: "worker", required: []string{"queue"}, summary: "Apply the deliveries that serve --queue stored in the delivery queue.",
			about: "Apply the deliveries that serve --queue stored in the delivery queue, with the same\n" +
				"ingest as synchronous mode, acknowledging each after its commit. Any number of\n" +
				"workers may run; each tenant's deliveries are applied in the order received.\n" +
				"Needs the database (DATABASE_URL) and TIDEMARK_ENCRYPTION_KEY, like serve.",
			flags: func(e cliEnv, fs *flag.FlagSet) { e.addQueueFlags(fs, false); logFormatFlag(fs) }, run: cliEnv.worker},
		{name: "migrate", summary: "Apply pending database migrations and exit.",
			about: "Apply pending database migrations and exit.",
			flags: func(cliEnv, *flag.FlagSet) {}, run: cliEnv.migrate},
		{name: "citus distribute", summary: "Distribute the migrated database by tenant over a Citus cluster.",
			about: "Distribute the migrated database by tenant over a Citus cluster. Run it on the coordinator\n" +
				"(DATABASE_URL) after migrate: tenants, users, enabled_admins, id_hash_key and the apps' tables\n" +
				"become reference tables and every other table with a tenant_id is distributed by it, co-located.\n" +
				"One transaction; run again, it changes nothing. See docs/scale.md.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { citusDistributeFlags(fs) }, run: cliEnv.citusDistribute},
		{name: "tenant create", args: "SLUG", summary: "Create a tenant (a customer workspace).",
			about: "Create a tenant (a customer workspace).",
			flags: func(_ cliEnv, fs *flag.FlagSet) { tenantCreateFlags(fs) }, run: cliEnv.tenantCreate},
		{name: "tenant update", args: "SLUG", required: []string{"max-destinations"}, summary: "Change a tenant's limits.",
			about: "Change a tenant's limits: --max-destinations, how many destinations it may have (default 20).",
			flags: func(_ cliEnv, fs *flag.FlagSet) { tenantUpdateFlags(fs) }, run: cliEnv.tenantUpdate},
		{name: "provider create", required: []string{"tenant", "name", "kind"},
			summary: "Connect a webhook provider to a tenant; prints its secret (salesforce: its webhook URL).",
			about: "Connect a webhook provider to a tenant. Prints its signing secret or token as the last line\n" +
				"(salesforce: the webhook URL to paste into Salesforce, ending in ?token=<token>).",
			flags: func(e cliEnv, fs *flag.FlagSet) { e.providerCreateFlags(fs) }, run: cliEnv.providerCreate},
		{name: "provider rotate", required: []string{"tenant", "name"},
			summary: "Add a new signing secret; the previous one works until the next rotation or retire.",
			about: "Add a new signing secret (a salesforce provider: a new URL token). The previous one keeps working\n" +
				"until the next rotation or `provider retire`, so senders can switch without dropping deliveries.\n" +
				"Prints the new secret as the last line (salesforce: the webhook URL with the new token).",
			flags: func(e cliEnv, fs *flag.FlagSet) { e.providerRotateFlags(fs) }, run: cliEnv.providerRotate},
		{name: "provider retire", required: []string{"tenant", "name"},
			summary: "Retire every secret of the provider but the newest.",
			about: "End a rotation: retire every secret of the provider but the newest, so only it is accepted.\n" +
				"Prints how many were retired.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { providerRetireFlags(fs) }, run: cliEnv.providerRetire},
		{name: "provider update", required: []string{"tenant", "provider"},
			summary: "Change a provider's limits, its API credentials (for backfill) or its Change Data Capture.",
			about: "Change a provider's limits, then print them; or set or clear the credentials of its API, from\n" +
				"which backfill pulls what webhooks missed. HubSpot: a private app's access token from standard\n" +
				"input (--api-token-stdin). Salesforce: a connected app's --client-id, its secret from standard\n" +
				"input (--client-secret-stdin) and --login-url. The secret is stored encrypted and never printed;\n" +
				"the command prints the other fields it set. Salesforce with a connected app: --cdc subscribes to\n" +
				"the org's change events (Change Data Capture), --no-cdc stops. The change is recorded in the audit log.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { providerUpdateFlags(fs) }, run: cliEnv.providerUpdate},
		{name: "app create", required: []string{"kind", "name", "app-id", "client-id", "client-secret-stdin"},
			summary: "Register a HubSpot public app (an admin's, for every tenant); prints its webhook URL.",
			about: "Register a HubSpot public app, global: each tenant's portal is installed into it, and HubSpot sends\n" +
				"every installed portal's webhooks to the app's one URL, signed with its client secret. The secret is\n" +
				"read from standard input, stored encrypted and never printed. URLs given are refused when http or\n" +
				"private unless --allow-private. Prints the webhook URL, the app's target URL at HubSpot, last.",
			flags: func(e cliEnv, fs *flag.FlagSet) { e.appCreateFlags(fs) }, run: cliEnv.appCreate},
		{name: "app rotate", required: []string{"name", "client-secret-stdin"},
			summary: "Set an app's new client secret; the previous one still verifies for 24h.",
			about: "Set an app's new client secret, read from standard input, after rotating it at HubSpot. The previous\n" +
				"one still verifies deliveries for 24 hours; one rotated out before it no longer does. Audited.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { appRotateFlags(fs) }, run: cliEnv.appRotate},
		{name: "app list", summary: "List the apps: name, kind, app id, client id, scopes, created, rotated.",
			about: "List the apps, one line each after a header: name, kind, app id, client id, scopes, when it was\n" +
				"created and when its client secret was last rotated. Never the secret.",
			flags: func(cliEnv, *flag.FlagSet) {}, run: cliEnv.appList},
		{name: "app delete", required: []string{"name", "confirm"},
			summary: "Delete an app with its secrets and every install.",
			about: "Delete an app with its secrets and every install (each recorded in its tenant's audit log). The\n" +
				"tenants' providers and records are kept.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { appDeleteFlags(fs) }, run: cliEnv.appDelete},
		{name: "app connect", required: []string{"app", "tenant", "portal-id"},
			summary: "Map a portal of an app to a tenant's provider by hand (webhooks only, no tokens).",
			about: "Map a HubSpot portal of an app to a tenant's provider, without OAuth: its webhooks are routed to the\n" +
				"provider, and there are no tokens to call its API. The provider is created, of the app's kind, when\n" +
				"missing. A portal mapped to another tenant is refused, naming it. Audited in the tenant's log.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { appConnectFlags(fs) }, run: cliEnv.appConnect},
		{name: "app disconnect", required: []string{"app", "portal-id"},
			summary: "Remove a portal's mapping and tokens; its provider and records are kept.",
			about: "Remove a portal's mapping and tokens: its webhooks are no longer routed to any tenant. The provider\n" +
				"and its records are kept. Audited in the tenant's log.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { appDisconnectFlags(fs) }, run: cliEnv.appDisconnect},
		{name: "app installs", required: []string{"app"},
			summary: "List an app's installs: portal, tenant, provider, status, tokens.",
			about: "List an app's installs, one line each after a header: portal, tenant, provider, status (active or\n" +
				"needs_reconnect), whether it holds tokens, and when it was made.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { appInstallsFlags(fs) }, run: cliEnv.appInstalls},
		{name: "app subscriptions", required: []string{"app"},
			summary: "Show an app's Webhooks Journal subscriptions at HubSpot, or set them from a file.",
			about: "Without --set, list the app's journal subscriptions at HubSpot, one line each after a header: id, type,\n" +
				"object type, actions, properties, portal. With --set FILE (a JSON array of subscriptions:\n" +
				"subscriptionType, objectTypeId, actions, properties, optional portalId), make HubSpot's set the file's:\n" +
				"create the missing ones, delete the others, print each change; run twice, the second changes nothing.\n" +
				"Uses the app's client credentials token. Changes are audited outside any tenant.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { appSubscriptionsFlags(fs) }, run: cliEnv.appSubscriptions},
		{name: "token create", summary: "Create an API token for one tenant (--tenant) or the admin API (--admin); prints it once.",
			about: "Create an API token for one tenant (--tenant), or with --admin an admin API token: no tenant, good only\n" +
				"for /api/v1/admin/..., answering for the enabled admin operator --by names, and working only while\n" +
				"they are one. Prints it as the last line; it is not stored and cannot be shown again. Audited.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { tokenCreateFlags(fs) }, run: cliEnv.tokenCreate},
		{name: "token list", required: []string{"admin"}, summary: "List the admin API tokens: id, name, admin, status, dates.",
			about: "List the admin API tokens, one line each after a header: id, name, the admin it answers for, status\n" +
				"(works, revoked, expired, or creator-not-admin), when it was created, when it expires, when last used.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { tokenListFlags(fs) }, run: cliEnv.tokenList},
		{name: "token revoke", required: []string{"admin", "id"}, summary: "Revoke an admin API token at once.",
			about: "Revoke an admin API token at once, by the id token list --admin shows. Revoking a revoked one is no\n" +
				"error. Audited.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { tokenRevokeFlags(fs) }, run: cliEnv.tokenRevoke},
		{name: "destination create", required: []string{"tenant"},
			summary: "Push a tenant's changes to a URL or NATS; prints its signing secret.",
			about: "Create a destination: each change of the tenant it selects is POSTed to --url as a Standard\n" +
				"Webhooks message signed with the destination's secret, or published to --nats under --subject.\n" +
				"Give --url, or --nats with --subject and --nats-creds or --nats-nkey. It receives the changes\n" +
				"committed after it is created. Loopback, private, link-local and metadata addresses, and a NATS\n" +
				"server without credentials, are refused, after DNS resolution, unless --allow-private is given.\n" +
				"Prints the signing secret as the last line (shown once).",
			flags: func(_ cliEnv, fs *flag.FlagSet) { destinationCreateFlags(fs) }, run: cliEnv.destinationCreate},
		{name: "destination list", required: []string{"tenant"},
			summary: "List a tenant's destinations: status, target, filters, pending changes, lag.",
			about: "List a tenant's destinations: id, status (active, paused or failing, with why), target,\n" +
				"filters, pending changes (taken, not yet answered 2xx) and lag (how long the oldest has waited).",
			flags: func(_ cliEnv, fs *flag.FlagSet) { destinationListFlags(fs) }, run: cliEnv.destinationList},
		{name: "destination update", required: []string{"tenant", "id"},
			summary: "Set or remove a destination's filter and transform (CEL expressions).",
			about: "Set a destination's --filter (which messages are sent) or --transform (the data of each change's\n" +
				"message), CEL expressions checked before they are stored; --no-filter and --no-transform remove\n" +
				"them. What is not given stays. A paused or failing destination stays so: resume it.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { destinationUpdateFlags(fs) }, run: cliEnv.destinationUpdate},
		{name: "destination rotate", required: []string{"tenant", "id"},
			summary: "Give a destination a new signing secret; the previous one still signs for 24h.",
			about: "Give a destination a new signing secret. For 24 hours each message carries two signatures,\n" +
				"one with each secret, so the consumer can switch without refusing one. Prints the new secret\n" +
				"as the last line (shown once).",
			flags: func(_ cliEnv, fs *flag.FlagSet) { destinationRotateFlags(fs) }, run: cliEnv.destinationRotate},
		{name: "destination pause", required: []string{"tenant", "id"},
			summary: "Stop sending to a destination; its changes wait.",
			about:   "Stop sending to a destination. Its changes keep being taken and wait until it is resumed.",
			flags:   func(_ cliEnv, fs *flag.FlagSet) { destinationIDFlags(fs) },
			run:     destinationAction("destination pause", cliStore.PauseDestination, "is paused; its changes wait until destination resume")},
		{name: "destination resume", required: []string{"tenant", "id"},
			summary: "Resume a paused or failing destination; its pending changes are retried now.",
			about:   "Resume a paused or failing destination; its pending changes are retried now.",
			flags:   func(_ cliEnv, fs *flag.FlagSet) { destinationIDFlags(fs) },
			run:     destinationAction("destination resume", cliStore.ResumeDestination, "is resumed; its pending changes are retried now")},
		{name: "destination rewind", required: []string{"tenant", "id", "after"},
			summary: "Send a destination every change after a feed cursor again.",
			about: "Send a destination every change it selects after --after again, a cursor of the change feed\n" +
				"(\"\" for the oldest change kept). Its pending changes are dropped and taken again from there.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { destinationRewindFlags(fs) }, run: cliEnv.destinationRewind},
		{name: "destination delete", required: []string{"tenant", "id"},
			summary: "Delete a destination with its secrets, pending changes and attempts.",
			about:   "Delete a destination with its secrets, pending changes and attempts.",
			flags:   func(_ cliEnv, fs *flag.FlagSet) { destinationIDFlags(fs) },
			run:     destinationAction("destination delete", cliStore.DeleteDestination, "is deleted")},
		{name: "alert set", required: []string{"tenant", "rule"},
			summary: "Change a tenant's alert rule, then print its setting.",
			about: "Change a tenant's alert rule: its threshold, its window (a duration such as 90s, 5m or 6h)\n" +
				"and whether it is evaluated (--disable, --enable); what is not given stays as it is. Prints\n" +
				"the rule's setting. The change is recorded in the audit log.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { alertSetFlags(fs) }, run: cliEnv.alertSet},
		{name: "alert list", required: []string{"tenant"},
			summary: "List a tenant's alert rules and the alerts firing now.",
			about: "List a tenant's alert rules (enabled, threshold, window; the default where no one changed\n" +
				"it) and then the alerts firing now: id, since when, rule and summary.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { alertListFlags(fs) }, run: cliEnv.alertList},
		{name: "user create", required: []string{"email", "password-stdin"},
			summary: "Create a console operator; the password is read from standard input.",
			about:   "Create a console operator. The password is read from the first line of standard input.",
			flags:   func(_ cliEnv, fs *flag.FlagSet) { userCreateFlags(fs) }, run: cliEnv.userCreate},
		{name: "user password", required: []string{"email", "password-stdin"},
			summary: "Set an operator's password from standard input and end their sessions.",
			about: "Set a console operator's password, read from the first line of standard input, end\n" +
				"their sessions and revoke the API tokens they created. The change is recorded in the audit log.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { userPasswordFlags(fs) }, run: cliEnv.userPassword},
		{name: "cleanup", summary: "Run one maintenance pass, then exit.",
			about: "Run one maintenance pass, then exit: remove expired idempotency keys, event-log\n" +
				"partitions past retention, accepted revisions and resolved conflicts past the\n" +
				"history retention and audit entries older than 400 days, and prepare the partitions\n" +
				"of the next 30 days. A pass is skipped while another process runs one; steps that\n" +
				"wait on a long transaction are deferred to the next pass.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { cleanupFlags(fs) }, run: cliEnv.cleanup},
		{name: "audit", summary: "Check the invariants over what is stored; exits 1 when one is violated.",
			about: "Check the invariants Tidemark's guarantees rest on (reconciliation, see\n" +
				"docs/contract/operations.md), print each violation with its ids, then a one-line total.\n" +
				"Exits 0 when there are none, 1 otherwise. Without --tenant every tenant is checked and\n" +
				"the report becomes the last one, which the admin console and /metrics show; serve runs\n" +
				"this check every night.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { auditFlags(fs) }, run: cliEnv.audit},
		{name: "backfill", required: []string{"tenant", "provider"},
			summary: "Pull the records a provider's webhooks missed from its API and print counts per outcome.",
			about: "Pull from the provider's API (HubSpot or Salesforce; its credentials set with provider update)\n" +
				"every record of its scopes' object types modified in the last --since, and write them through\n" +
				"the ingest as deliveries whose source is backfill: a change webhooks missed is applied, one they\n" +
				"brought is redundant or stale, one pulled before a duplicate, a contradiction a revision conflict.\n" +
				"Prints the counts per outcome; progress goes to standard error.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { backfillFlags(fs) }, run: cliEnv.backfill},
		{name: "secrets rekey", summary: "Re-encrypt provider and destination secrets under the first key of TIDEMARK_ENCRYPTION_KEY.",
			about: "Re-encrypt every provider and destination secret under the first key of TIDEMARK_ENCRYPTION_KEY,\n" +
				"bound to its tenant and provider or destination, and print how many of each changed. Secrets\n" +
				"already there are left alone, so a second run changes 0; expired destination secrets, which\n" +
				"never sign again, are skipped. Afterwards the other keys can be dropped from the list.",
			flags: func(_ cliEnv, fs *flag.FlagSet) { secretsRekeyFlags(fs) }, run: cliEnv.secretsRekey},
		{name: "send", required: []string{"url", "secret"},
			summary: "Send one delivery signed with Standard Webhooks and print the answer.",
			about:   "Send one delivery signed with Standard Webhooks, as a provider would, and print the answer.",
			flags:   func(_ cliEnv, fs *flag.FlagSet) { sendFlags(fs) }, run: cliEnv.send},
	}
}

// lookupCommand finds a command by the name typed.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// isGroup reports whether name is the first word of commands with a
// subcommand ("provider" of "provider create").
func isGroup(name string) bool {
	for _, c := range commands() {
		if strings.HasPrefix(c.name, name+" ") {
			return true
		}
	}
	return false
}

// isHelp reports whether arg asks for help in place of a command or subcommand.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "help" }

// synopsisWidth is where the help wraps a synopsis.
const synopsisWidth = 100

// synopsis is c's usage line after "tidemark ", built by visiting the flags
// its flags function declares: the positional arguments, the required
// flags in c.required's order, then the others in [brackets] by name. It
// is wrapped at synopsisWidth, continuation lines indented by indent plus
// the command's name.
func (c command) synopsis(indent string) string {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(cliEnv{getenv: func(string) string { return "" }}, fs) // defaults as built, not the environment's
	words := []string{c.name}
	if c.args != "" {
		words = append(words, c.args)
	}
	for _, name := range c.required {
		if f := fs.Lookup(name); f != nil {
			words = append(words, flagWord(f))
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		for _, name := range c.required {
			if f.Name == name {
				return
			}
		}
		words = append(words, "["+flagWord(f)+"]")
	})
	lines, line := []string{}, words[0]
	for _, w := range words[1:] {
		if len(indent)+len(line)+1+len(w) > synopsisWidth && strings.TrimSpace(line) != c.name {
			lines = append(lines, line)
			line = strings.Repeat(" ", len(c.name)+1) + w
			continue
		}
		line += " " + w
	}
	lines = append(lines, line)
	return strings.Join(lines, "\n"+indent)
}

// flagWord is "--name VALUE", or "--name" for a boolean flag.
func flagWord(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "--" + f.Name
	}
	return "--" + f.Name + " " + metavar(f)
}

// metavars name the value of flags whose default does not show what to
// give.
var metavars = map[string]string{
	"access": "read|write", "after": "CURSOR", "api-base-url": "URL", "app": "NAME", "app-id": "ID", "authorize-url": "URL", "api-budget": "PERCENT", "api-version": "v62.0",
	"cdc-channel": "/data/ChangeEvents", "pubsub-url": "HOST:PORT",
	"client-id": "ID", "login-url": "URL", "allowed-networks": "CIDR,...", "auth": "hmac|token", "body": "FILE",
	"by": "EMAIL", "contact": "ID", "email": "EMAIL", "expires": "90d", "format": "standard|slack", "history-retention": "DURATION", "id": "ID",
	"max-body": "SIZE", "max-destinations": "N", "max-future-skew": "DURATION", "max-in-flight": "N", "metrics-addr": "ADDR", "name": "NAME",
	"nats": "nats://HOST:4222", "nats-creds": "FILE", "nats-nkey": "FILE", "nats-tls-ca": "FILE", "object-type": "TYPE", "org-id": "ID",
	"portal-id": "N", "provider": "NAME", "public-url": "URL", "queue": "nats://HOST:4222", "queue-creds": "FILE", "queue-nkey": "FILE",
	"queue-tls-ca": "FILE", "revision": "N",
	"revision-field": "FIELD", "role": "viewer|operator|owner", "rule": "RULE", "threshold": "N", "window": "DURATION", "secret": "SECRET", "snapshot": "JSON",
	"scopes": "SCOPES", "set": "FILE", "subject": "PREFIX", "tenant": "SLUG", "trusted-proxies": "CIDR,...", "types": "record.*[,...]", "url": "URL",
}

// metavar is what a synopsis shows as f's value: the one its value names,
// its metavar, the kinds for --kind, else its default, else its name in
// capitals.
func metavar(f *flag.Flag) string {
	if m, ok := f.Value.(interface{ Metavar() string }); ok {
		return m.Metavar()
	}
	if f.Name == "kind" {
		return strings.Join(provider.Names(), "|")
	}
	if m, ok := metavars[f.Name]; ok {
		return m
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if d, ok := g.Get().(time.Duration); ok && d != 0 {
			return domain.FormatDuration(d)
		}
	}
	if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" {
		return f.DefValue
	}
	return strings.ToUpper(f.Name)
}

// usage is tidemark --help: every command's synopsis and summary.
func usage() string {
	var b strings.Builder
	b.WriteString("tidemark: webhook idempotency and ordering for CRM data, on PostgreSQL.\n\nUsage:\n")
	writeSynopses(&b, commands())
	b.WriteString(environmentHelp)
	b.WriteString("\nRun \"tidemark COMMAND --help\" for a command's flags.\n")
	return b.String()
}

// groupUsage is tidemark GROUP --help: the synopses of its subcommands.
func groupUsage(group string) string {
	var in []command
	for _, c := range commands() {
		if strings.HasPrefix(c.name, group+" ") {
			in = append(in, c)
		}
	}
	var b strings.Builder
	b.WriteString("Usage:\n")
	writeSynopses(&b, in)
	fmt.Fprintf(&b, "\nRun \"tidemark %s COMMAND --help\" for a command's flags.\n", group)
	return b.String()
}

func writeSynopses(b *strings.Builder, cs []command) {
	const indent = "  tidemark "
	for _, c := range cs {
		fmt.Fprintf(b, "%s%s\n      %s\n", indent, c.synopsis(strings.Repeat(" ", len(indent))), c.summary)
	}
}

// environmentHelp is the help's Environment section.
const environmentHelp = `
Environment:
  DATABASE_URL             PostgreSQL connection string. Without it, serve starts an
                           embedded PostgreSQL under ./.tidemark with a demo tenant.
  TIDEMARK_ENCRYPTION_KEY  base64 of 32 bytes encrypting provider secrets at rest;
                           several comma-separated: the first encrypts, all decrypt.
                           Create it once (openssl rand -base64 32) and keep it. With
                           DATABASE_URL, commands that touch secrets refuse to run
                           without it; the embedded database uses (and creates)
                           ./.tidemark/encryption.key.
  TIDEMARK_PUBLIC_URL      base URL providers call (same as serve --public-url).
  TIDEMARK_TRUSTED_PROXIES same as serve --trusted-proxies.
  TIDEMARK_QUEUE           same as serve --queue and worker --queue.
`
