package hubspot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/domain"
)

// Settling a revision conflict by asking HubSpot for a snapshot of its
// record (docs/contract/apps.md#a-snapshot-to-settle-a-conflict): through
// the OAuth install of the portal whose events the conflict's provider
// receives, with the install's tokens. The snapshot arrives later, as a
// SNAPSHOT entry of the portal's journal.

// SnapshotStore is what asking for a conflict's snapshot needs of storage.
type SnapshotStore interface {
	InstallStore
	ProviderInstall(ctx context.Context, tenantID int64, providerName string) (domain.App, domain.AppInstall, error)
	RecordSnapshotRequested(ctx context.Context, tenantID int64, c domain.Conflict, statusID string) error
}

// ConflictSnapshots asks HubSpot for the snapshots that settle conflicts.
type ConflictSnapshots struct {
	Store SnapshotStore
	Log   *slog.Logger
}

// snapshotObjectTypes are HubSpot's ids of the object types it snapshots.
var snapshotObjectTypes = map[string]string{"contact": "0-1", "company": "0-2", "deal": "0-3", "ticket": "0-5"}

// askVia is the app and the install to ask c's snapshot through, or an
// ECONFLICT error saying why there is none.
func (s ConflictSnapshots) askVia(ctx context.Context, tenantID int64, c domain.Conflict) (domain.App, domain.AppInstall, error) {
	app, in, err := s.Store.ProviderInstall(ctx, tenantID, c.Provider)
	switch {
	case domain.ErrorCode(err) == domain.ENOTFOUND:
		return app, in, domain.Errorf(domain.ECONFLICT, "provider %s receives no portal of a HubSpot app: only an OAuth install can ask HubSpot for a snapshot", c.Provider)
	case err != nil:
		return app, in, err
	case app.Kind != domain.AppKindHubSpot:
		return app, in, domain.Errorf(domain.ECONFLICT, "provider %s receives the portal of an app that is not HubSpot's", c.Provider)
	case !in.HasTokens:
		return app, in, domain.Errorf(domain.ECONFLICT, "portal %d of app %s was connected by hand, without tokens: install it by OAuth to ask HubSpot for snapshots", in.PortalID, app.Name)
	case in.Status == domain.InstallNeedsReconnect:
		return app, in, domain.Errorf(domain.ECONFLICT, "portal %d of app %s needs reconnecting: an owner must install the app again", in.PortalID, app.Name)
	case c.Status != domain.ConflictOpen:
		return app, in, domain.Errorf(domain.ECONFLICT, "conflict %d is already %s", c.ID, c.Status)
	}
	if snapshotObjectTypes[c.ObjectType] == "" {
		return app, in, domain.Errorf(domain.ECONFLICT, "HubSpot snapshots cover contacts, companies, deals and tickets, not a %s", c.ObjectType)
	}
	if n, err := strconv.ParseInt(c.ObjectID, 10, 64); err != nil || n <= 0 {
		return app, in, domain.Errorf(domain.ECONFLICT, "%s %q is not a HubSpot object id", c.ObjectType, c.ObjectID)
	}
	return app, in, nil
}

// SnapshotAskable is nil when HubSpot can be asked for a snapshot of c's
// record, else an ECONFLICT error saying why not.
func (s ConflictSnapshots) SnapshotAskable(ctx context.Context, tenantID int64, c domain.Conflict) error {
	_, _, err := s.askVia(ctx, tenantID, c)
	return err
}

// AskSnapshot asks HubSpot for a snapshot of d's record, with the
// properties the conflict disputes and the record holds, records that it
// asked (audited in the tenant's log) and returns the request's status
// id. It is ECONFLICT when it cannot ask (SnapshotAskable), and
// EUNAVAILABLE, with HubSpot's reason, when HubSpot refuses or cannot be
// reached; nothing is recorded then.
func (s ConflictSnapshots) AskSnapshot(ctx context.Context, tenantID int64, d domain.ConflictDetail) (string, error) {
	app, in, err := s.askVia(ctx, tenantID, d.Conflict)
	if err != nil {
		return "", err
	}
	c, tokens, err := ForInstall(ctx, s.Store, app, in, s.Log)
	if err != nil {
		return "", err
	}
	id, _ := strconv.ParseInt(d.ObjectID, 10, 64)
	accepted, err := c.RequestSnapshots(ctx, tokens, []SnapshotRequest{{PortalID: in.PortalID, ObjectTypeID: snapshotObjectTypes[d.ObjectType],
		ObjectID: id, Properties: snapshotProperties(d)}})
	if err == nil && (len(accepted) == 0 || accepted[0].StatusID == "") {
		err = errNoStatus
	}
	if err != nil {
		return "", domain.Errorf(domain.EUNAVAILABLE, "HubSpot did not take the request: %s", strings.TrimPrefix(err.Error(), "hubspot: "))
	}
	if err := s.Store.RecordSnapshotRequested(ctx, tenantID, d.Conflict, accepted[0].StatusID); err != nil {
		return "", err
	}
	return accepted[0].StatusID, nil
}

// errNoStatus is an answer that accepted nothing to follow.
var errNoStatus = errors.New("its answer has no snapshotStatusId")

// snapshotProperties are the properties a snapshot is asked for: those of
// both snapshots the conflict holds and of the record, sorted; Tidemark's
// pseudo-properties ($created, $deleted) left out.
func snapshotProperties(d domain.ConflictDetail) []string {
	names := []string{}
	add := func(raw json.RawMessage) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		for k := range m {
			if !strings.HasPrefix(k, "$") && !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
	}
	add(d.ConflictingSnapshot)
	add(d.AcceptedSnapshot)
	if d.Current != nil {
		add(d.Current.Snapshot)
	}
	slices.Sort(names)
	return names
}
