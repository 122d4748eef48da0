package salesforce

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// ingester delivers events to a Salesforce provider of a fresh store, one
// delivery each.
type ingester struct {
	store *postgres.Store
	p     domain.ProviderEndpoint
}

func newIngester(t *testing.T) ingester {
	t.Helper()
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	store, err := postgres.New(testdb.New(t), []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	tn, err := store.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.ConnectProvider(ctx, tn.ID, "sf", "salesforce", "", map[string]string{"org_id": org}); err != nil {
		t.Fatal(err)
	}
	p, err := store.Endpoint(ctx, "acme", "sf")
	if err != nil {
		t.Fatal(err)
	}
	return ingester{store: store, p: p}
}

// ingest delivers e and fails the test unless its outcome is want.
func (in ingester) ingest(t *testing.T, e domain.Event, want domain.Outcome) domain.Result {
	t.Helper()
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: in.p.TenantID, ProviderID: in.p.ID,
		ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid}
	rs, err := in.store.Ingest(context.Background(), d, in.p, []domain.Event{e})
	if err != nil {
		t.Fatalf("ingest %s: %v", e.EventID, err)
	}
	if rs[0].Outcome != want {
		t.Fatalf("event %s: %s (%s), want %s", e.EventID, rs[0].Outcome, rs[0].Reason, want)
	}
	return rs[0]
}

func (in ingester) record(t *testing.T, id string) domain.Record {
	t.Helper()
	r, err := in.store.Record(context.Background(), in.p.TenantID, domain.RecordRef{Provider: "sf", ObjectType: "contact", ObjectID: id})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pullOne pulls contacts over the minute around at and returns the one
// event.
func pullOne(t *testing.T, f fixture, at time.Time) domain.Event {
	t.Helper()
	pages, err := f.pullAll(t, "contact", at.Add(-time.Minute), at.Add(time.Minute))
	if err != nil || len(pages) != 1 || len(pages[0]) != 1 {
		t.Fatalf("pull: %v %v", pages, err)
	}
	return pages[0][0]
}

// What the store decides of pulled events beside the webhook's: the same
// record and revision is redundant, pulled twice a duplicate, pulled with
// other fields an event conflict; and a deletion marks
// the record deleted without touching its snapshot.
func TestPulledEventsThroughTheStore(t *testing.T) {
	t.Parallel()
	in := newIngester(t)
	received := parseOutbound(t, fixtureBody(t, "contact.xml"), nil)[0]
	in.ingest(t, received, domain.Applied)
	modstamp := received.RevisionTime
	id := received.ObjectID
	rest := map[string]any{"Email": "ada@example.com", "FirstName": "Ada", "LastName": "Lovelace & Co", "MobilePhone": nil}

	f := setup(t, WithFields("contact", "Email", "FirstName", "LastName", "MobilePhone"))
	f.org.Put("Contact", id, modstamp, rest)
	pulled := pullOne(t, f, modstamp)
	in.ingest(t, pulled, domain.Redundant)
	in.ingest(t, pulled, domain.Duplicate)

	// The fields the outbound message carries are not named: the pulled
	// snapshot is another one at the same revision, under the event id
	// the first pull claimed.
	bare := setup(t)
	bare.org.Put("Contact", id, modstamp, rest)
	in.ingest(t, pullOne(t, bare, modstamp), domain.EventConflict)

	// A change the webhooks missed is applied.
	changed := modstamp.Add(2 * time.Minute)
	f.org.Put("Contact", id, changed, map[string]any{"Email": "ada@analytical.example", "FirstName": "Ada", "LastName": "Lovelace & Co", "MobilePhone": nil})
	in.ingest(t, pullOne(t, f, changed), domain.Applied)

	// The deletion: applied, the record keeps its snapshot, and its
	// revision and deleted revision become the deletion's.
	before := in.record(t, id)
	deletedAt := modstamp.Add(5 * time.Minute)
	f.org.Delete("Contact", id, deletedAt)
	deletion := pullOne(t, f, deletedAt)
	in.ingest(t, deletion, domain.Applied)
	after := in.record(t, id)
	if string(after.Snapshot) != string(before.Snapshot) || after.Revision != *deletion.Revision ||
		after.DeletedRevision == nil || *after.DeletedRevision != *deletion.Revision {
		t.Fatalf("after the deletion: snapshot %s revision %d deleted %v; before: %s %d",
			after.Snapshot, after.Revision, after.DeletedRevision, before.Snapshot, before.Revision)
	}
	in.ingest(t, deletion, domain.Duplicate)

	// A webhook of a change older than the deletion, arriving late, is stale.
	late := received
	late.EventID += "-late"
	in.ingest(t, late, domain.Stale)

	// A newer change (Salesforce undeletes from the recycle bin) applies;
	// the deleted revision stays.
	undeleted := modstamp.Add(7 * time.Minute)
	f.org.Put("Contact", id, undeleted, rest)
	in.ingest(t, pullOne(t, f, undeleted), domain.Applied)
	if r := in.record(t, id); r.DeletedRevision == nil || *r.DeletedRevision != *deletion.Revision {
		t.Fatalf("after the undeletion: deleted %v", r.DeletedRevision)
	}

	// A deletion of a record the store never saw creates it, deleted, with
	// an empty snapshot.
	f.org.Put("Contact", "003NEVER", deletedAt.Add(-time.Hour), nil)
	f.org.Delete("Contact", "003NEVER", deletedAt.Add(5*time.Minute))
	in.ingest(t, pullOne(t, f, deletedAt.Add(5*time.Minute)), domain.Applied)
	if r := in.record(t, "003NEVER"); string(r.Snapshot) != "{}" || r.DeletedRevision == nil {
		t.Fatalf("the unknown record after its deletion: %s deleted %v", r.Snapshot, r.DeletedRevision)
	}
}
