package views

import (
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/domain/stream"
)

// auditActionTexts says what each recorded action did, as the middle of a
// sentence whose subject is the actor and whose object is the target
// ("ann@example.com created an API token reporting"); where the target
// names its kind ("conflict 4", "destination 2"), the verb does not.
var auditActionTexts = map[string]string{
	domain.AuditConflictResolve:           "resolved", // target: conflict N (...)
	domain.AuditProviderCreate:            "connected a provider",
	domain.AuditProviderRotate:            "rotated the secret of a provider",
	domain.AuditProviderRetire:            "retired the old secrets of a provider",
	domain.AuditProviderUpdate:            "changed a provider",
	domain.AuditProviderSecretShown:       "confirmed the issued secret of a provider",
	domain.AuditProviderDelete:            "removed a provider",
	pull.AuditCredentialsSet:              "set the API credentials of a provider",
	pull.AuditCredentialsClear:            "cleared the API credentials of a provider",
	domain.AuditScopeUpdate:               "changed a scope",
	domain.AuditOperatorCreate:            "created an operator",
	domain.AuditOperatorAdmin:             "changed the admin rights of an operator",
	domain.AuditOperatorDisable:           "disabled an operator",
	domain.AuditOperatorEnable:            "enabled an operator",
	domain.AuditOperatorPassword:          "reset the password of an operator",
	domain.AuditOperatorSignOut:           "signed out everywhere an operator",
	domain.AuditSignIn:                    "signed in",
	domain.AuditMemberAdd:                 "added a member",
	domain.AuditMemberRole:                "changed the role of a member",
	domain.AuditMemberRemove:              "removed a member",
	domain.AuditTokenCreate:               "created an API token",
	domain.AuditTokenRevoke:               "revoked an API token",
	domain.AuditReconciliationRun:         "ran the reconciliation of",
	domain.AuditSSOSet:                    "set up single sign-on with",
	domain.AuditSSODisable:                "turned off single sign-on with",
	domain.AuditSSOMap:                    "mapped the identity provider's group",
	domain.AuditSSOUnmap:                  "unmapped the identity provider's group",
	domain.AuditOperatorBreakGlass:        "changed the break-glass standing of",
	domain.ActionRecordReset:              "reset a record",
	domain.ActionRecordErase:              "erased a record",
	domain.ActionLeadErase:                "erased a lead",
	domain.ReplayAction:                   "replayed", // target: delivery ID
	domain.ReplayStartAction:              "started",  // target: replay job N
	domain.ReplayCancelAction:             "cancelled",
	domain.ReplayDoneAction:               "finished",
	pull.AuditBackfillStart:               "started", // target: backfill job N
	pull.AuditBackfillCancel:              "cancelled",
	stream.AuditDestinationCreate:         "added", // target: destination N
	stream.AuditDestinationUpdate:         "changed the filter or transform of",
	stream.AuditDestinationRotate:         "rotated the secret of",
	stream.AuditDestinationPause:          "paused",
	stream.AuditDestinationResume:         "resumed",
	stream.AuditDestinationRewind:         "rewound",
	stream.AuditDestinationDelete:         "deleted",
	alerting.AuditRuleSet:                 "changed", // target: alert rule NAME
	domain.AuditAppCreate:                 "registered the app",
	domain.AuditAppRotate:                 "rotated the client secret of the app",
	domain.AuditAppDelete:                 "deleted the app",
	domain.AuditAppSubscriptions:          "set the journal subscriptions of the app",
	domain.AuditAppConnect:                "connected by hand", // target: APP portal N
	domain.AuditAppInstall:                "installed by OAuth",
	domain.AuditAppDisconnect:             "disconnected",
	domain.AuditAppNeedsReconnect:         "marked needs reconnect",
	domain.AuditAppJournalExpired:         "searched the gap of an expired journal offset of",
	domain.AuditCDCReplayReset:            "backfilled the gap of a refused CDC replay id of", // target: the provider
	domain.AuditConflictSnapshotRequested: "asked the provider for a snapshot to settle",
	domain.AuditAdminTokenCreate:          "created an admin API token",
	domain.AuditAdminTokenRevoke:          "revoked an admin API token",
	domain.AuditTenantCreate:              "created", // target: tenant SLUG
	domain.AuditTenantRename:              "renamed",
	domain.AuditTenantArchive:             "archived",
	domain.AuditTenantUnarchive:           "unarchived",
	domain.AuditTenantDelete:              "deleted",
}

// AuditActionText is what a recorded action did, in words ("created an
// API token"); an action this version does not know is shown with its
// underscores as spaces. The raw action stays the filter's value.
func AuditActionText(action string) string {
	if s, ok := auditActionTexts[action]; ok {
		return s
	}
	return strings.ReplaceAll(action, "_", " ")
}

// auditEntryText is what an entry's actor did: a refused sign-in is an
// attempt, not a sign-in.
func auditEntryText(e domain.AuditEntry) string {
	if e.Action == domain.AuditSignIn && e.Summary != domain.SignInSucceeded {
		return "tried to sign in"
	}
	return AuditActionText(e.Action)
}

// auditEntryTarget is the object of the entry's sentence; a sign-in names
// its own actor, so the target is left out.
func auditEntryTarget(e domain.AuditEntry) string {
	if e.Action == domain.AuditSignIn && e.Target == e.Actor {
		return ""
	}
	return e.Target
}

// auditActor names who made a change. The command line acts as the
// operating-system user; an entry from before that was recorded, or made
// where no user could be found, names the command line itself.
func auditActor(e domain.AuditEntry) string {
	if e.ActorKind == domain.ActorCLI && (e.Actor == "" || e.Actor == "unknown") {
		return "cli"
	}
	return e.Actor
}

// auditFrom is where a change came from: the client address, or the
// command line for the CLI, which has none.
func auditFrom(e domain.AuditEntry) string {
	if e.ClientAddress == "" && e.ActorKind == domain.ActorCLI {
		return "command line"
	}
	return e.ClientAddress
}
