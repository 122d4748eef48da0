package hook

import (
	"encoding/json"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

// HubSpot's app lifecycle events (docs/contract/apps.md#uninstall): an
// event whose subscriptionType (or eventType) is APP_LIFECYCLE_EVENT says
// that the app was installed in or uninstalled from its portal (action
// APP_INSTALL or APP_UNINSTALL, the journal's subscription actions). It is
// no record's change: it is taken out of the batch before routing. An
// uninstall removes the portal's install and tokens; an install changes
// nothing, as installs come by OAuth.
const (
	lifecycleType = "APP_LIFECYCLE_EVENT"
	appUninstall  = "APP_UNINSTALL"
	appInstall    = "APP_INSTALL"
)

// lifecycleEvent is an app lifecycle event of a batch.
type lifecycleEvent struct {
	portal int64
	action string
	at     time.Time // occurredAt; the delivery's arrival when it has none
}

// lifecycleOf reads an event as a lifecycle event; false for any other
// event. The action is "action", or eventType when that names one.
func lifecycleOf(payload []byte, received time.Time) (lifecycleEvent, bool) {
	var f struct {
		SubscriptionType string `json:"subscriptionType"`
		EventType        string `json:"eventType"`
		Action           string `json:"action"`
		OccurredAt       int64  `json:"occurredAt"`
	}
	if json.Unmarshal(payload, &f) != nil || (f.SubscriptionType != lifecycleType && f.EventType != lifecycleType) {
		return lifecycleEvent{}, false
	}
	e := lifecycleEvent{portal: portalOf(payload), action: f.Action, at: received}
	if e.action == "" && (f.EventType == appUninstall || f.EventType == appInstall) {
		e.action = f.EventType
	}
	if f.OccurredAt > 0 && time.UnixMilli(f.OccurredAt).Before(received) {
		e.at = time.UnixMilli(f.OccurredAt)
	}
	return e, true
}

// takeLifecycle splits the batch's lifecycle events from its record
// events.
func takeLifecycle(events []domain.Event, received time.Time) (records []domain.Event, lifecycle []lifecycleEvent) {
	for _, e := range events {
		if l, ok := lifecycleOf(e.Payload, received); ok {
			lifecycle = append(lifecycle, l)
			continue
		}
		records = append(records, e)
	}
	return records, lifecycle
}

// uninstall removes the installs of the portals the batch's uninstalls
// name, after the batch's other events committed (they happened while
// the app was installed), and returns how many it removed. An uninstall
// of a portal installed for no tenant, or installed again since, is
// ignored: there is nothing to remove, and nothing to apply.
func (h *Handler) uninstall(a *appInbound, lifecycle []lifecycleEvent) (int, *refusal) {
	ctx := domain.WithActor(a.ctx, domain.Actor{Kind: domain.ActorToken, Name: "app " + a.app.Name, Address: httpx.ClientAddress(a.r)})
	removed := 0
	for _, l := range lifecycle {
		if l.action != appUninstall || l.portal == 0 {
			continue
		}
		in, err := a.store.UninstallPortal(ctx, a.app.ID, l.portal, l.at)
		switch {
		case domain.ErrorCode(err) == domain.ENOTFOUND:
			h.log.InfoContext(a.r.Context(), "app uninstall ignored", "app", a.app.Name, "portal", l.portal, "reason", domain.ErrorMessage(err))
			continue
		case err != nil:
			return removed, &refusal{err: err, kind: appKind}
		}
		removed++
		h.log.InfoContext(a.r.Context(), "app uninstalled", "app", a.app.Name, "portal", in.PortalID,
			"tenant", in.TenantSlug, "provider", in.ProviderName)
	}
	return removed, nil
}
