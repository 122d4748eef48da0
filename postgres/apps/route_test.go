package apps_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// TestPortalRoutesAndUnrouted: a batch's portals resolve to their
// installs at once, leaving out those installed for no one or for a
// provider that is gone; unrouted events are counted per portal and
// minute with each portal's last sample, which a late older batch does
// not replace.
func TestPortalRoutesAndUnrouted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	app := f.createApp(t, "crm-sync")
	for portal, tp := range map[int64][2]int64{101: {f.acme, f.acmeHub}, 202: {f.globex, f.globexHub}} {
		if _, err := f.s.ConnectPortal(f.ctx, app.Name, portal, tp[0], tp[1]); err != nil {
			t.Fatal(err)
		}
	}
	routes, err := f.s.PortalRoutes(f.ctx, app.ID, []int64{101, 202, 303})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(routes)); !slices.Equal(got, []int64{101, 202}) {
		t.Fatalf("routes for portals %v", got)
	}
	if r := routes[202]; r.TenantSlug != "globex" || r.ProviderName != "hub" || r.ProviderID != f.globexHub {
		t.Errorf("portal 202 routes to %+v", r)
	}
	if _, err := f.s.Pool().Exec(f.ctx, `DELETE FROM providers WHERE tenant_id = $1 AND id = $2`, f.globex, f.globexHub); err != nil {
		t.Fatal(err)
	}
	if routes, err := f.s.PortalRoutes(f.ctx, app.ID, []int64{101, 202}); err != nil || len(routes) != 1 {
		t.Errorf("after its provider is gone: %v, %v", routes, err)
	}

	now := time.Now()
	count := func(at time.Time, portals ...domain.UnroutedPortal) {
		t.Helper()
		if err := f.s.CountUnrouted(f.ctx, app.ID, at, portals); err != nil {
			t.Fatal(err)
		}
	}
	count(now, domain.UnroutedPortal{PortalID: 303, N: 2, Sample: []byte(`[{"a":1},{"a":2}]`)}, domain.UnroutedPortal{PortalID: 0, N: 1, Sample: []byte(`[{}]`)})
	count(now.Add(time.Minute), domain.UnroutedPortal{PortalID: 303, N: 1, Sample: []byte(`[{"a":3}]`)})
	count(now.Add(-time.Minute), domain.UnroutedPortal{PortalID: 303, N: 4, Sample: []byte(`[{"late":true}]`)})
	count(now.Add(time.Minute), domain.UnroutedPortal{PortalID: 303, N: 1, Sample: []byte(`[{"a":3}]`)})
	got, err := f.s.AppUnrouted(f.ctx, app.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].PortalID != 0 || got[0].Count != 1 || got[1].PortalID != 303 || got[1].Count != 8 ||
		string(got[1].LastSample) != `[{"a":3}]` || !got[1].LastSeen.Equal(now.Add(time.Minute).Truncate(time.Microsecond)) {
		t.Fatalf("unrouted %+v", got)
	}
	if err := f.s.DeleteApp(f.ctx, app.Name); err != nil {
		t.Fatal(err)
	}
}
