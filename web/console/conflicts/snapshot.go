package conflicts

import (
	"context"
	"fmt"
	"net/http"

	"github.com/tidemark/tidemark/domain"
)

// SnapshotAsker asks a conflict's provider for a fresh snapshot of the
// record, which arrives later through the provider's journal and settles
// the conflict if newer: HubSpot's CRM snapshots through the portal's
// OAuth install (internal/pull/hubspot.ConflictSnapshots, which cmd
// wires in).
type SnapshotAsker interface {
	// SnapshotAskable is nil when the record of c can be asked for, else
	// an ECONFLICT error saying why not.
	SnapshotAskable(ctx context.Context, tenantID int64, c domain.Conflict) error
	// AskSnapshot asks for it, records that it asked and returns the
	// request's status id: ECONFLICT when it cannot ask, EUNAVAILABLE
	// when the provider refused or could not be reached.
	AskSnapshot(ctx context.Context, tenantID int64, d domain.ConflictDetail) (string, error)
}

// canAskSnapshot reports whether the conflict page shows the operator
// the button that asks for a snapshot.
func (h Pages) canAskSnapshot(r *http.Request, c domain.Conflict) (bool, error) {
	m := h.Console.Membership(r)
	if h.Snapshots == nil || c.Status != domain.ConflictOpen || !m.Role.Allows(domain.RoleOperator) {
		return false, nil
	}
	err := h.Snapshots.SnapshotAskable(r.Context(), m.Tenant.ID, c)
	if domain.ErrorCode(err) == domain.ECONFLICT {
		return false, nil
	}
	return err == nil, err
}

// HandleAskSnapshot asks the provider for a snapshot of the conflict's
// record (operators). A conflict whose record cannot be asked for is a
// 409 page saying why; the provider refusing or unreachable goes back to
// the conflict saying so, with nothing recorded.
func (h Pages) HandleAskSnapshot(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := conflictIDParam(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	t := h.tenant(r)
	if h.Snapshots == nil {
		h.Console.Error(w, r, domain.Errorf(domain.ECONFLICT, "this server asks no provider for snapshots"))
		return
	}
	d, err := h.Store.ConflictDetail(ctx, t.ID, id)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	back := fmt.Sprintf("/t/%s/conflicts/%d", t.Slug, id)
	_, err = h.Snapshots.AskSnapshot(ctx, t.ID, d)
	if domain.ErrorCode(err) == domain.EUNAVAILABLE {
		h.Console.RedirectWithFlash(w, r, back, "error", "No snapshot was asked for: "+domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.RedirectWithFlash(w, r, back, "ok", fmt.Sprintf("Asked HubSpot for a snapshot of %s %s; it arrives through the journal "+
		"and settles the conflict if newer.", d.ObjectType, d.ObjectID))
}
