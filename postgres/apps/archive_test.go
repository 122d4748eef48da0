package apps_test

import "testing"

// TestArchivedTenantsPortalsAreUnrouted: an archived tenant's portals
// route nowhere, so the app endpoint counts their events as unrouted;
// unarchived, they route again.
func TestArchivedTenantsPortalsAreUnrouted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	app := f.createApp(t, "crm-sync")
	if _, err := f.s.ConnectPortal(f.ctx, app.Name, 202, f.globex, f.globexHub); err != nil {
		t.Fatal(err)
	}
	routed := func() int {
		t.Helper()
		routes, err := f.s.PortalRoutes(f.ctx, app.ID, []int64{202})
		if err != nil {
			t.Fatal(err)
		}
		return len(routes)
	}
	if _, err := f.s.ArchiveTenant(f.ctx, "globex"); err != nil {
		t.Fatal(err)
	}
	if n := routed(); n != 0 {
		t.Fatalf("an archived tenant's portal routes (%d)", n)
	}
	if _, err := f.s.UnarchiveTenant(f.ctx, "globex"); err != nil {
		t.Fatal(err)
	}
	if n := routed(); n != 1 {
		t.Fatalf("after unarchive, %d routes, want 1", n)
	}
}
