package main

import (
	"context"
	"flag"
	"strings"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/cmd/tidemark/internal/mcpbridge"
	"github.com/tidemark/tidemark/cmd/tidemark/internal/providercmd"
	"github.com/tidemark/tidemark/cmd/tidemark/internal/providerlist"
	"github.com/tidemark/tidemark/cmd/tidemark/internal/ssocmd"
	"github.com/tidemark/tidemark/cmd/tidemark/internal/tenantcmd"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/internal/provider"
)

// command is one tidemark command (cmd/tidemark/internal/cli).
type command = cli.Command[cliEnv]

// commands is every command, in the order the help lists them.
func commands() cli.List[cliEnv] {
	return cli.List[cliEnv]{Program: "tidemark", Blank: cliEnv{getenv: func(string) string { return "" }}, Metavars: metavars(),
		Commands: commandList()}
}

// usage is tidemark --help: every command's synopsis and summary.
func usage() string {
	return commands().Usage("tidemark: webhook idempotency and ordering for CRM data, on PostgreSQL.\n", environmentHelp)
}

// metavars name the value of flags whose default does not show what to
// give.
func metavars() map[string]string {
	m := map[string]string{
		"access": "read|write", "after": "CURSOR", "api-base-url": "URL", "app": "NAME", "app-id": "ID", "authorize-url": "URL", "api-budget": "PERCENT", "api-version": "v62.0",
		"cdc-channel": "/data/ChangeEvents", "pubsub-url": "HOST:PORT",
		"client-id": "ID", "login-url": "URL", "allowed-networks": "CIDR,...", "auth": "hmac|token", "issuer": "URL", "group": "GROUP", "allowed-domains": "DOMAIN,...", "groups-claim": "CLAIM",
		"password-sign-in": "all|admins|off", "session-length": "12h", "body": "FILE",
		"by": "EMAIL", "contact": "ID", "email": "EMAIL", "expires": "90d", "format": "standard|slack", "history-retention": "DURATION", "id": "ID",
		"max-body": "SIZE", "max-destinations": "N", "max-future-skew": "DURATION", "max-in-flight": "N", "metrics-addr": "ADDR", "name": "NAME",
		"nats": "nats://HOST:4222", "nats-creds": "FILE", "nats-nkey": "FILE", "nats-tls-ca": "FILE", "object-type": "TYPE", "org-id": "ID",
		"portal-id": "N", "provider": "NAME", "public-url": "URL", "queue": "nats://HOST:4222", "queue-creds": "FILE", "queue-nkey": "FILE",
		"queue-tls-ca": "FILE", "revision": "N",
		"revision-field": "FIELD", "role": "viewer|operator|owner", "rule": "RULE", "threshold": "N", "window": "DURATION", "secret": "SECRET", "snapshot": "JSON",
		"scopes": "SCOPES", "set": "FILE", "subject": "PREFIX", "tenant": "SLUG", "trusted-proxies": "CIDR,...", "types": "record.*[,...]", "url": "URL",
	}
	m["kind"] = strings.Join(provider.Names(), "|")
	return m
}

func commandList() []command {
	return []command{
		{Name: "serve", Summary: "Run the webhook receiver, the JSON API and the console.",
			About: "Run the webhook receiver, the JSON API and the console. Applies migrations at start\n" +
				"and runs the cleanup job every hour, the reconciliation every night and bulk replay\n" +
				"jobs. Without DATABASE_URL it starts an embedded PostgreSQL under ./.tidemark with a\n" +
				"demo tenant, and listens on loopback only unless --allow-remote is given.",
			Flags: func(e cliEnv, fs *flag.FlagSet) { e.serveFlags(fs) }, Run: cliEnv.serve},
		{Name: "worker", Required: []string{"queue"}, Summary: "Apply the deliveries that serve --queue stored in the delivery queue.",
			About: "Apply the deliveries that serve --queue stored in the delivery queue, with the same\n" +
				"ingest as synchronous mode, acknowledging each after its commit. Any number of\n" +
				"workers may run; each tenant's deliveries are applied in the order received.\n" +
				"Needs the database (DATABASE_URL) and TIDEMARK_ENCRYPTION_KEY, like serve.",
			Flags: func(e cliEnv, fs *flag.FlagSet) { e.addQueueFlags(fs, false); logFormatFlag(fs) }, Run: cliEnv.worker},
		{Name: "migrate", Summary: "Apply pending database migrations and exit.",
			About: "Apply pending database migrations and exit.",
			Flags: func(cliEnv, *flag.FlagSet) {}, Run: cliEnv.migrate},
		{Name: "citus distribute", Summary: "Distribute the migrated database by tenant over a Citus cluster.",
			About: "Distribute the migrated database by tenant over a Citus cluster. Run it on the coordinator\n" +
				"(DATABASE_URL) after migrate: tenants, users, enabled_admins, id_hash_key and the apps' tables\n" +
				"become reference tables and every other table with a tenant_id is distributed by it, co-located.\n" +
				"One transaction; run again, it changes nothing. See docs/scale.md.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { citusDistributeFlags(fs) }, Run: cliEnv.citusDistribute},
		{Name: "tenant create", Args: "SLUG", Summary: "Create a tenant (a customer workspace).",
			About: "Create a tenant (a customer workspace).",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tenantCreateFlags(fs) }, Run: cliEnv.tenantCreate},
		{Name: "tenant update", Args: "SLUG", Required: []string{"max-destinations"}, Summary: "Change a tenant's limits.",
			About: "Change a tenant's limits: --max-destinations, how many destinations it may have (default 20).",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tenantUpdateFlags(fs) }, Run: cliEnv.tenantUpdate},
		{Name: "tenant list", Summary: "List the tenants: slug, name, status (active or archived), created.",
			About: "List every tenant, archived ones too, one line each: slug, name, status (active or archived), created.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tenantcmd.NoFlags(fs) }, Run: tenantRun(tenantcmd.List)},
		{Name: "tenant rename", Args: "SLUG", Required: []string{"name"}, Summary: "Change a tenant's display name; the slug stays.",
			About: "Change a tenant's display name; its slug, and so its URLs, stay. Audited as tenant_rename.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tenantcmd.RenameFlags(fs) }, Run: tenantRun(tenantcmd.Rename)},
		{Name: "tenant archive", Args: "SLUG", Summary: "Archive a tenant: deliveries and its API answer 404; its data is kept.",
			About: "Archive a tenant: its webhooks and its API answer 404, the console hides it, its senders, sweeps\n" +
				"and journal reads stop; its data is kept until unarchive or delete. Audited as tenant_archive.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tenantcmd.NoFlags(fs) }, Run: tenantRun(tenantcmd.Archive(true))},
		{Name: "tenant unarchive", Args: "SLUG", Summary: "Make an archived tenant active again.",
			About: "Make an archived tenant active again: it receives deliveries, its API answers and its senders resume.\n" +
				"Audited as tenant_unarchive.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tenantcmd.NoFlags(fs) }, Run: tenantRun(tenantcmd.Archive(false))},
		{Name: "tenant delete", Args: "SLUG", Summary: "Delete a tenant and erase all its data (--confirm); without it, print what would go.",
			About: "Delete a tenant: erase its rows from every tenant table (the audit log is kept), then the tenant, in\n" +
				"one transaction. Without --confirm it prints what would be erased and refuses. Audited as tenant_delete.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tenantcmd.DeleteFlags(fs) }, Run: tenantRun(tenantcmd.Delete)},
		{Name: "provider create", Required: []string{"tenant", "provider", "kind"},
			Summary: "Connect a webhook provider to a tenant; prints its secret (salesforce: its webhook URL).",
			About: "Connect a webhook provider to a tenant. Prints its signing secret or token as the last line\n" +
				"(salesforce: the webhook URL to paste into Salesforce, ending in ?token=<token>).",
			Flags: func(e cliEnv, fs *flag.FlagSet) { e.providerCreateFlags(fs) }, Run: cliEnv.providerCreate},
		{Name: "provider rotate", Required: []string{"tenant", "provider"},
			Summary: "Add a new signing secret; the previous one works until the next rotation or retire.",
			About: "Add a new signing secret (a salesforce provider: a new URL token). The previous one keeps working\n" +
				"until the next rotation or `provider retire`, so senders can switch without dropping deliveries.\n" +
				"Prints the new secret as the last line (salesforce: the webhook URL with the new token).",
			Flags: func(e cliEnv, fs *flag.FlagSet) { e.providerRotateFlags(fs) }, Run: cliEnv.providerRotate},
		{Name: "provider retire", Required: []string{"tenant", "provider"},
			Summary: "Retire every secret of the provider but the newest.",
			About: "End a rotation: retire every secret of the provider but the newest, so only it is accepted.\n" +
				"Prints how many were retired.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { providerRetireFlags(fs) }, Run: cliEnv.providerRetire},
		{Name: "provider update", Required: []string{"tenant", "provider"},
			Summary: "Change a provider's limits, its API credentials (for backfill) or its Change Data Capture.",
			About: "Change a provider's limits, then print them; or set or clear the credentials of its API, from\n" +
				"which backfill pulls what webhooks missed. HubSpot: a private app's access token from standard\n" +
				"input (--api-token-stdin). Salesforce: a connected app's --client-id, its secret from standard\n" +
				"input (--client-secret-stdin) and --login-url. The secret is stored encrypted and never printed;\n" +
				"the command prints the other fields it set. Salesforce with a connected app: --cdc subscribes to\n" +
				"the org's change events (Change Data Capture), --no-cdc stops. The change is recorded in the audit log.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { providerUpdateFlags(fs) }, Run: cliEnv.providerUpdate},
		{Name: "provider delete", Required: []string{"tenant", "provider", "confirm"},
			Summary: "Remove a provider: its URL answers 404, its secrets and credentials go; its history stays unless --erase.",
			About: "Remove a provider, in one transaction: POST /webhooks/TENANT/PROVIDER answers 404 from then on; its\n" +
				"signing secrets, API credentials, Change Data Capture stream and app installs are deleted and its\n" +
				"backfills cancelled. Its history stays, shown as provider \"NAME (removed)\", unless --erase erases it as\n" +
				"erasing each record does. The name is free for a new provider. Without --confirm it prints what it\n" +
				"would remove and changes nothing. The removal is recorded in the audit log.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { providercmd.DeleteFlags(fs) },
			Run: func(e cliEnv, ctx context.Context, args []string) error {
				return cliError(providercmd.Delete(ctx, providercmd.Env{Stdout: e.stdout, Flags: e.flags,
					WithTenant: func(ctx context.Context, slug string, fn func(providercmd.Store, domain.Tenant) error) error {
						return e.withTenant(ctx, slug, func(s cliStore, t domain.Tenant) error { return fn(s, t) })
					}}, args))
			}},
		{Name: "provider list", Required: []string{"tenant"},
			Summary: "List a tenant's providers: name, kind, secrets, API credentials, deliveries, webhook path.",
			About: "List a tenant's providers, one line each after a header: name, kind, active secrets (two while a\n" +
				"rotation is not retired), API credentials (for backfill), deliveries in the last 24 hours, the last\n" +
				"delivery, and the webhook URL's path. Never a secret.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { providerlist.Flags(fs) }, Run: cliEnv.providerList},
		{Name: "app create", Required: []string{"kind", "name", "app-id", "client-id", "client-secret-stdin"},
			Summary: "Register a HubSpot public app (an admin's, for every tenant); prints its webhook URL.",
			About: "Register a HubSpot public app, global: each tenant's portal is installed into it, and HubSpot sends\n" +
				"every installed portal's webhooks to the app's one URL, signed with its client secret. The secret is\n" +
				"read from standard input, stored encrypted and never printed. URLs given are refused when http or\n" +
				"private unless --allow-private. Prints the webhook URL, the app's target URL at HubSpot, last.",
			Flags: func(e cliEnv, fs *flag.FlagSet) { e.appCreateFlags(fs) }, Run: cliEnv.appCreate},
		{Name: "app rotate", Required: []string{"name", "client-secret-stdin"},
			Summary: "Set an app's new client secret; the previous one still verifies for 24h.",
			About: "Set an app's new client secret, read from standard input, after rotating it at HubSpot. The previous\n" +
				"one still verifies deliveries for 24 hours; one rotated out before it no longer does. Audited.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { appRotateFlags(fs) }, Run: cliEnv.appRotate},
		{Name: "app list", Summary: "List the apps: name, kind, app id, client id, scopes, created, rotated.",
			About: "List the apps, one line each after a header: name, kind, app id, client id, scopes, when it was\n" +
				"created and when its client secret was last rotated. Never the secret.",
			Flags: func(cliEnv, *flag.FlagSet) {}, Run: cliEnv.appList},
		{Name: "app delete", Required: []string{"name", "confirm"},
			Summary: "Delete an app with its secrets and every install.",
			About: "Delete an app with its secrets and every install (each recorded in its tenant's audit log). The\n" +
				"tenants' providers and records are kept.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { appDeleteFlags(fs) }, Run: cliEnv.appDelete},
		{Name: "app connect", Required: []string{"app", "tenant", "portal-id"},
			Summary: "Map a portal of an app to a tenant's provider by hand (webhooks only, no tokens).",
			About: "Map a HubSpot portal of an app to a tenant's provider, without OAuth: its webhooks are routed to the\n" +
				"provider, and there are no tokens to call its API. The provider is created, of the app's kind, when\n" +
				"missing. A portal mapped to another tenant is refused, naming it. Audited in the tenant's log.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { appConnectFlags(fs) }, Run: cliEnv.appConnect},
		{Name: "app disconnect", Required: []string{"app", "portal-id"},
			Summary: "Remove a portal's mapping and tokens; its provider and records are kept.",
			About: "Remove a portal's mapping and tokens: its webhooks are no longer routed to any tenant. The provider\n" +
				"and its records are kept. Audited in the tenant's log.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { appDisconnectFlags(fs) }, Run: cliEnv.appDisconnect},
		{Name: "app installs", Required: []string{"app"},
			Summary: "List an app's installs: portal, tenant, provider, status, tokens.",
			About: "List an app's installs, one line each after a header: portal, tenant, provider, status (active or\n" +
				"needs_reconnect), whether it holds tokens, and when it was made.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { appInstallsFlags(fs) }, Run: cliEnv.appInstalls},
		{Name: "app subscriptions", Required: []string{"app"},
			Summary: "Show an app's Webhooks Journal subscriptions at HubSpot, or set them from a file.",
			About: "Without --set, list the app's journal subscriptions at HubSpot, one line each after a header: id, type,\n" +
				"object type, actions, properties, portal. With --set FILE (a JSON array of subscriptions:\n" +
				"subscriptionType, objectTypeId, actions, properties, optional portalId), make HubSpot's set the file's:\n" +
				"create the missing ones, delete the others, print each change; run twice, the second changes nothing.\n" +
				"Uses the app's client credentials token. Changes are audited outside any tenant.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { appSubscriptionsFlags(fs) }, Run: cliEnv.appSubscriptions},
		{Name: "token create", Summary: "Create an API token for one tenant (--tenant) or the admin API (--admin); prints it once.",
			About: "Create an API token for one tenant (--tenant), or with --admin an admin API token: no tenant, good only\n" +
				"for /api/v1/admin/..., answering for the enabled admin operator --by names, and working only while\n" +
				"they are one. Prints it as the last line; it is not stored and cannot be shown again. Audited.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tokenCreateFlags(fs) }, Run: cliEnv.tokenCreate},
		{Name: "token list", Required: []string{"admin"}, Summary: "List the admin API tokens: id, name, admin, status, dates.",
			About: "List the admin API tokens, one line each after a header: id, name, the admin it answers for, status\n" +
				"(works, revoked, expired, or creator-not-admin), when it was created, when it expires, when last used.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tokenListFlags(fs) }, Run: cliEnv.tokenList},
		{Name: "token revoke", Required: []string{"admin", "id"}, Summary: "Revoke an admin API token at once.",
			About: "Revoke an admin API token at once, by the id token list --admin shows. Revoking a revoked one is no\n" +
				"error. Audited.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { tokenRevokeFlags(fs) }, Run: cliEnv.tokenRevoke},
		{Name: "destination create", Required: []string{"tenant"},
			Summary: "Push a tenant's changes to a URL or NATS; prints its signing secret.",
			About: "Create a destination: each change of the tenant it selects is POSTed to --url as a Standard\n" +
				"Webhooks message signed with the destination's secret, or published to --nats under --subject.\n" +
				"Give --url, or --nats with --subject and --nats-creds or --nats-nkey. It receives the changes\n" +
				"committed after it is created. Loopback, private, link-local and metadata addresses, and a NATS\n" +
				"server without credentials, are refused, after DNS resolution, unless --allow-private is given.\n" +
				"Prints the signing secret as the last line (shown once).",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { destinationCreateFlags(fs) }, Run: cliEnv.destinationCreate},
		{Name: "destination list", Required: []string{"tenant"},
			Summary: "List a tenant's destinations: status, target, filters, pending changes, lag.",
			About: "List a tenant's destinations: id, status (active, paused or failing, with why), target,\n" +
				"filters, pending changes (taken, not yet answered 2xx) and lag (how long the oldest has waited).",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { destinationListFlags(fs) }, Run: cliEnv.destinationList},
		{Name: "destination update", Required: []string{"tenant", "id"},
			Summary: "Set or remove a destination's filter and transform (CEL expressions).",
			About: "Set a destination's --filter (which messages are sent) or --transform (the data of each change's\n" +
				"message), CEL expressions checked before they are stored; --no-filter and --no-transform remove\n" +
				"them. What is not given stays. A paused or failing destination stays so: resume it.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { destinationUpdateFlags(fs) }, Run: cliEnv.destinationUpdate},
		{Name: "destination rotate", Required: []string{"tenant", "id"},
			Summary: "Give a destination a new signing secret; the previous one still signs for 24h.",
			About: "Give a destination a new signing secret. For 24 hours each message carries two signatures,\n" +
				"one with each secret, so the consumer can switch without refusing one. Prints the new secret\n" +
				"as the last line (shown once).",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { destinationRotateFlags(fs) }, Run: cliEnv.destinationRotate},
		{Name: "destination pause", Required: []string{"tenant", "id"},
			Summary: "Stop sending to a destination; its changes wait.",
			About:   "Stop sending to a destination. Its changes keep being taken and wait until it is resumed.",
			Flags:   func(_ cliEnv, fs *flag.FlagSet) { destinationIDFlags(fs) },
			Run:     destinationAction("destination pause", cliStore.PauseDestination, "is paused; its changes wait until destination resume")},
		{Name: "destination resume", Required: []string{"tenant", "id"},
			Summary: "Resume a paused or failing destination; its pending changes are retried now.",
			About:   "Resume a paused or failing destination; its pending changes are retried now.",
			Flags:   func(_ cliEnv, fs *flag.FlagSet) { destinationIDFlags(fs) },
			Run:     destinationAction("destination resume", cliStore.ResumeDestination, "is resumed; its pending changes are retried now")},
		{Name: "destination rewind", Required: []string{"tenant", "id", "after"},
			Summary: "Send a destination every change after a feed cursor again.",
			About: "Send a destination every change it selects after --after again, a cursor of the change feed\n" +
				"(\"\" for the oldest change kept). Its pending changes are dropped and taken again from there.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { destinationRewindFlags(fs) }, Run: cliEnv.destinationRewind},
		{Name: "destination delete", Required: []string{"tenant", "id"},
			Summary: "Delete a destination with its secrets, pending changes and attempts.",
			About:   "Delete a destination with its secrets, pending changes and attempts.",
			Flags:   func(_ cliEnv, fs *flag.FlagSet) { destinationIDFlags(fs) },
			Run:     destinationAction("destination delete", cliStore.DeleteDestination, "is deleted")},
		{Name: "alert set", Required: []string{"tenant", "rule"},
			Summary: "Change a tenant's alert rule, then print its setting.",
			About: "Change a tenant's alert rule: its threshold, its window (a duration such as 90s, 5m or 6h)\n" +
				"and whether it is evaluated (--disable, --enable); what is not given stays as it is. Prints\n" +
				"the rule's setting. The change is recorded in the audit log.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { alertSetFlags(fs) }, Run: cliEnv.alertSet},
		{Name: "alert list", Required: []string{"tenant"},
			Summary: "List a tenant's alert rules and the alerts firing now.",
			About: "List a tenant's alert rules (enabled, threshold, window; the default where no one changed\n" +
				"it) and then the alerts firing now: id, since when, rule and summary.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { alertListFlags(fs) }, Run: cliEnv.alertList},
		{Name: "user create", Required: []string{"email", "password-stdin"},
			Summary: "Create a console operator; the password is read from standard input.",
			About:   "Create a console operator. The password is read from the first line of standard input.",
			Flags:   func(_ cliEnv, fs *flag.FlagSet) { userCreateFlags(fs) }, Run: cliEnv.userCreate},
		{Name: "user password", Required: []string{"email", "password-stdin"},
			Summary: "Set an operator's password from standard input and end their sessions.",
			About: "Set a console operator's password, read from the first line of standard input, end\n" +
				"their sessions and revoke the API tokens they created. The change is recorded in the audit log.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { userPasswordFlags(fs) }, Run: cliEnv.userPassword},
		{Name: "sso set", Required: []string{"issuer", "client-id", "client-secret-stdin"},
			Summary: "Set up single sign-on with an OpenID Connect provider; prints the redirect URI.",
			About: "Set up single sign-on: the console's sign-in page offers \"Sign in with NAME\" (authorization code\n" +
				"with PKCE). The issuer's discovery document is read first; the client secret, from standard input, is\n" +
				"stored encrypted. Nobody signs in by SSO until a rule maps one of their groups (sso map). Audited.",
			Flags: func(e cliEnv, fs *flag.FlagSet) { ssocmd.SetFlags(fs, e.getenv) }, Run: ssoRun(ssocmd.Set)},
		{Name: "sso show", Summary: "Show the single sign-on setup and its group rules (never the secret).",
			About: "Show the single sign-on setup and its group rules, never the client secret.",
			Flags: func(cliEnv, *flag.FlagSet) {}, Run: ssoRun(ssocmd.Show)},
		{Name: "sso disable", Summary: "Turn single sign-on off; password sign-in works for everyone again.",
			About: "Turn single sign-on off: password sign-in works for everyone again. The setup and rules are kept\n" +
				"for sso set to turn it on again. Audited.",
			Flags: func(cliEnv, *flag.FlagSet) {}, Run: ssoRun(ssocmd.Disable)},
		{Name: "sso map", Required: []string{"group"}, Summary: "Map a provider group to a role in a tenant (--tenant --role) or to admin.",
			About: "Map a group of the identity provider to a role in a tenant (--tenant, --role) or to the admin flag\n" +
				"(--admin). At every SSO sign-in an operator's memberships and admin flag are set from the rules of\n" +
				"their groups (the highest role where several give one tenant). Audited.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { ssocmd.RuleFlags(fs, true) }, Run: ssoRun(ssocmd.Map)},
		{Name: "sso unmap", Required: []string{"group"}, Summary: "Remove a group's rule for a tenant (--tenant) or admin.",
			About: "Remove a group's rule for a tenant (--tenant) or the admin flag (--admin). The access it gave ends\n" +
				"at each operator's next sign-in. Audited.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { ssocmd.RuleFlags(fs, false) }, Run: ssoRun(ssocmd.Unmap)},
		{Name: "sso break-glass", Required: []string{"email"}, Summary: "Let an admin sign in with a password when it is kept for admins.",
			About: "Mark an admin as break-glass: with sso set --password-sign-in admins, only they may still sign in\n" +
				"with a password (--off: no longer). Audited.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { ssocmd.BreakGlassFlags(fs) }, Run: ssoRun(ssocmd.BreakGlass)},
		{Name: "cleanup", Summary: "Run one maintenance pass, then exit.",
			About: "Run one maintenance pass, then exit: remove expired idempotency keys, event-log\n" +
				"partitions past retention, accepted revisions and resolved conflicts past the\n" +
				"history retention and audit entries older than 400 days, and prepare the partitions\n" +
				"of the next 30 days. A pass is skipped while another process runs one; steps that\n" +
				"wait on a long transaction are deferred to the next pass.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { cleanupFlags(fs) }, Run: cliEnv.cleanup},
		{Name: "audit", Summary: "Check the invariants over what is stored; exits 1 when one is violated.",
			About: "Check the invariants Tidemark's guarantees rest on (reconciliation, see\n" +
				"docs/contract/operations.md), print each violation with its ids, then a one-line total.\n" +
				"Exits 0 when there are none, 1 otherwise. Without --tenant every tenant is checked and\n" +
				"the report becomes the last one, which the admin console and /metrics show; serve runs\n" +
				"this check every night.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { auditFlags(fs) }, Run: cliEnv.audit},
		{Name: "backfill", Required: []string{"tenant", "provider"},
			Summary: "Pull the records a provider's webhooks missed from its API and print counts per outcome.",
			About: "Pull from the provider's API (HubSpot or Salesforce; its credentials set with provider update)\n" +
				"every record of its scopes' object types modified in the last --since, and write them through\n" +
				"the ingest as deliveries whose source is backfill: a change webhooks missed is applied, one they\n" +
				"brought is redundant or stale, one pulled before a duplicate, a contradiction a revision conflict.\n" +
				"Prints the counts per outcome; progress goes to standard error.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { backfillFlags(fs) }, Run: cliEnv.backfill},
		{Name: "secrets rekey", Summary: "Re-encrypt provider and destination secrets under the first key of TIDEMARK_ENCRYPTION_KEY.",
			About: "Re-encrypt every provider and destination secret under the first key of TIDEMARK_ENCRYPTION_KEY,\n" +
				"bound to its tenant and provider or destination, and print how many of each changed. Secrets\n" +
				"already there are left alone, so a second run changes 0; expired destination secrets, which\n" +
				"never sign again, are skipped. Afterwards the other keys can be dropped from the list.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { secretsRekeyFlags(fs) }, Run: cliEnv.secretsRekey},
		{Name: "send", Required: []string{"url", "secret"},
			Summary: "Send one delivery signed with Standard Webhooks and print the answer.",
			About:   "Send one delivery signed with Standard Webhooks, as a provider would, and print the answer.",
			Flags:   func(_ cliEnv, fs *flag.FlagSet) { sendFlags(fs) }, Run: cliEnv.send},
		{Name: "mcp", Required: []string{"url"},
			Summary: "Bridge a desktop assistant's MCP stdio to Tidemark's MCP server, as the token in TIDEMARK_TOKEN.",
			About: "Bridge the Model Context Protocol's stdio transport, for assistants that start local MCP servers,\n" +
				"to Tidemark's MCP endpoint (POST /api/v1/mcp): each JSON-RPC message read from standard input, one a\n" +
				"line, is posted with the API token in TIDEMARK_TOKEN, and each answer written to standard output, one\n" +
				"a line. The token decides the tenant and the tools: a read-only token gets no write tool.",
			Flags: func(_ cliEnv, fs *flag.FlagSet) { mcpbridge.Flags(fs) }, Run: cliEnv.mcp},
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

// mcp is tidemark mcp (cmd/tidemark/internal/mcpbridge).
func (e cliEnv) mcp(ctx context.Context, args []string) error {
	return mcpbridge.Run(ctx, mcpbridge.Env{Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr, Getenv: e.getenv, Flags: e.flags}, args)
}

// ssoRun runs an sso command (cmd/tidemark/internal/ssocmd) in e.
func ssoRun(run func(context.Context, ssocmd.Env, []string) error) func(cliEnv, context.Context, []string) error {
	return func(e cliEnv, ctx context.Context, args []string) error {
		return cliError(run(ctx, ssocmd.Env{Stdin: e.stdin, Stdout: e.stdout, Getenv: e.getenv, Flags: e.flags,
			WithStore: func(ctx context.Context, fn func(identity.SSOService) error) error {
				return e.withStore(ctx, func(s cliStore) error { return fn(s) })
			}}, args))
	}
}
