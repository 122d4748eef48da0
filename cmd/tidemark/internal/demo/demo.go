// Package demo fills the demo workspace of tidemark serve's embedded
// default at its first start: the demo admin, tenant and provider (Create)
// and more than a week of synthetic history (Seed), so that a newcomer
// finds every console page showing something real.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
)

// demoSpan is how far back the demo history reaches: more than the
// overview's week, so that its periods differ and its chart spans days.
const demoSpan = 8 * 24 * time.Hour

// Seed fills the demo tenant (made by Create, as the demo admin whose
// steps it takes) with eight days of synthetic history, so every console
// page shows something real on first start: two more providers, contacts
// and deals in and out of order, retries, reused event ids, revision
// conflicts (two left open, one kept, one adopted), unversioned and
// malformed events, refused deliveries, webinar signups (people and their
// accounts), a paused destination, a scope disabled for a while and the
// finished replay job that re-ran what it rejected.
//
// Every delivery goes through the real webhook receiver, in process:
// signed with the provider's secret, verified, parsed and ingested exactly
// as one arriving over HTTP, only with the receiver's clock set back to
// when the delivery "arrived". The operator's steps (the scope, the
// destination) are taken through the store's services between deliveries;
// their audit entries carry the real time. The demo contacts start at
// c-2001, so the command serve prints (contact c-1001, the README's tour)
// is still applied.
func Seed(ctx context.Context, store *postgres.Store, log io.Writer) error {
	now := time.Now()
	start := now.Add(-demoSpan)
	if _, err := store.EnsurePartitions(ctx, start, int(demoSpan/(24*time.Hour))+1); err != nil {
		return fmt.Errorf("prepare event log partitions: %w", err)
	}
	t, err := store.Tenant(ctx, Tenant)
	if err != nil {
		return err
	}
	for _, name := range []string{"enrich", "billing"} {
		_, err := store.ConnectProvider(ctx, t.ID, name, provider.Standard.Name(), provider.NewStandardSecret(), nil)
		if err != nil && domain.ErrorCode(err) != domain.ECONFLICT {
			return fmt.Errorf("create provider %s: %w", name, err)
		}
	}

	// Connected before their history starts, as a real provider would be.
	if err := store.BackdateProviders(ctx, t.ID, start.Add(-time.Hour)); err != nil {
		return fmt.Errorf("date the demo providers: %w", err)
	}
	plan := demoHistory()
	s := &demoSeeder{store: store, endpoints: map[string]domain.ProviderEndpoint{}, outcomes: map[domain.Outcome]int{}}
	receiver := web.New(web.Config{Store: store, Now: s.now,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	s.receiver, s.replayer = receiver.Handler(), receiver.Replayer()
	// Deliveries arrive in plan order, evenly spread with some jitter.
	rng := rand.New(rand.NewPCG(7, 11))
	gap := demoSpan / time.Duration(len(plan)+1)
	for i, step := range plan {
		jitter := time.Duration((rng.Float64() - 0.5) * 0.6 * float64(gap))
		s.clock = start.Add(time.Duration(i+1)*gap + jitter).Truncate(time.Millisecond)
		if step.action != nil {
			if err := step.action(s.asOperator(ctx), s); err != nil {
				return fmt.Errorf("demo step %q: %w", step.id, err)
			}
			continue
		}
		s.deliveries++
		if err := s.deliver(ctx, step); err != nil {
			return fmt.Errorf("demo delivery %s to %s: %w", step.id, step.provider, err)
		}
	}
	if err := receiver.FlushRefusals(ctx); err != nil {
		return fmt.Errorf("write the refused demo deliveries: %w", err)
	}
	kept, adopted, err := s.resolveConflicts(ctx)
	if err != nil {
		return err
	}
	// An operator replays what the disabled scope rejected, now: the job's
	// times are the database's, and its page lists the replays received
	// while it ran.
	s.live = true
	job, err := s.replayRejected(s.asOperator(ctx), demoBillingScope)
	if err != nil {
		return fmt.Errorf("demo replay job: %w", err)
	}

	var counts []string
	events := 0
	for _, o := range domain.Outcomes {
		if n := s.outcomes[o]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, o))
			events += n
		}
	}
	fmt.Fprintf(log, "Demo history: %d deliveries over %d days (%d refused), %d events (%s); conflicts on %s kept, on %s adopted, the others open; "+
		"replay job %d: %s; destination %d paused.\n",
		s.deliveries, int(demoSpan/(24*time.Hour)), s.refused, events, strings.Join(counts, ", "), kept, adopted,
		job.ID, job.Summary(), s.destination)
	return nil
}

// demoStep is one delivery of the demo history.
type demoStep struct {
	provider string
	id       string         // webhook-id, the event id
	typ      string         // "contact.snapshot", "deal.snapshot"
	data     map[string]any // the "data" object
	resend   *demoStep      // an exact redelivery of that earlier step
	raw      []byte         // a body sent as is, instead of typ and data
	secret   string         // sign with this instead of the provider's secret
	age      time.Duration  // how far the signature timestamp lags the clock
	status   int            // the answer the receiver must give
	// action, when set, is an operator's step instead of a delivery (id
	// names it).
	action func(ctx context.Context, s *demoSeeder) error

	body []byte // as sent
}

type demoSeeder struct {
	store       *postgres.Store
	receiver    http.Handler
	replayer    *replay.Replayer
	clock       time.Time // when the delivery being seeded arrives
	live        bool      // the clock is the real one: the seeded history is over
	endpoints   map[string]domain.ProviderEndpoint
	outcomes    map[domain.Outcome]int
	deliveries  int
	refused     int
	destination int64 // the demo destination's id
}

// now is the receiver's clock.
func (s *demoSeeder) now() time.Time {
	if s.live {
		return time.Now()
	}
	return s.clock
}

// deliver signs step as its provider would and hands it to the receiver.
func (s *demoSeeder) deliver(ctx context.Context, step *demoStep) error {
	p, err := s.endpoint(ctx, step.provider)
	if err != nil {
		return err
	}
	switch {
	case step.resend != nil:
		step.body = step.resend.body
	case step.raw != nil:
		step.body = step.raw
	default:
		step.body, err = json.Marshal(map[string]any{"type": step.typ,
			"timestamp": s.clock.Add(-3 * time.Second).UTC().Format(time.RFC3339), "data": step.data})
		if err != nil {
			return err
		}
	}
	secret := p.Secrets[0]
	if step.secret != "" {
		secret = step.secret
	}
	ts := s.clock.Add(-step.age).Unix()
	sig, err := provider.SignStandard(secret, step.id, ts, step.body)
	if err != nil {
		return err
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/webhooks/"+Tenant+"/"+step.provider, bytes.NewReader(step.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", step.id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	rec := httptest.NewRecorder()
	s.receiver.ServeHTTP(rec, req)

	want := step.status
	if want == 0 {
		want = http.StatusOK
	}
	if rec.Code != want {
		return fmt.Errorf("receiver answered %d, want %d: %s", rec.Code, want, strings.TrimSpace(rec.Body.String()))
	}
	if rec.Code != http.StatusOK {
		s.refused++
		return nil
	}
	var answer struct {
		Results []struct {
			Outcome domain.Outcome `json:"outcome"`
		} `json:"results"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		return fmt.Errorf("receiver answer: %w", err)
	}
	for _, r := range answer.Results {
		s.outcomes[r.Outcome]++
	}
	return nil
}

// resolveConflicts settles two of the demo's revision conflicts as an
// operator would, and leaves the others open.
func (s *demoSeeder) resolveConflicts(ctx context.Context) (kept, adopted string, err error) {
	ctx = s.asOperator(ctx)
	tenantID := s.endpoints[Provider].TenantID
	open, _, err := s.store.Conflicts(ctx, tenantID, domain.ConflictOpen, domain.Page{Limit: 100})
	if err != nil {
		return "", "", fmt.Errorf("list demo conflicts: %w", err)
	}
	decisions := map[string]struct{ resolution, note string }{
		"c-2008": {domain.ResolveKeep, "Checked with sales ops: the CRM value is right, the workflow re-sent an old draft."},
		"c-2016": {domain.ResolveAdopt, "The contact confirmed the new title by email; adopting the second snapshot."},
	}
	for _, c := range open {
		d, ok := decisions[c.ObjectID]
		if !ok || c.Provider != Provider {
			continue
		}
		if _, err := s.store.ResolveConflict(ctx, tenantID, c.ID, d.resolution, d.note, Email); err != nil {
			return "", "", fmt.Errorf("resolve demo conflict %d: %w", c.ID, err)
		}
		if d.resolution == domain.ResolveKeep {
			kept = c.ObjectID
		} else {
			adopted = c.ObjectID
		}
	}
	if kept == "" || adopted == "" {
		return "", "", fmt.Errorf("the demo history opened no conflict on c-2008 or c-2016")
	}
	return kept, adopted, nil
}

type demoContact struct{ id, name, email, company, title, phone string }

var demoContacts = []demoContact{
	{"c-2001", "Ada Lindqvist", "ada.lindqvist@northwind.example", "Northwind Traders", "Operations Manager", "+1 415 555 0101"},
	{"c-2002", "Bruno Carvalho", "bruno@alpinegear.example", "Alpine Gear", "Head of Procurement", "+351 21 555 0102"},
	{"c-2003", "Chiara Bianchi", "c.bianchi@lumenlabs.example", "Lumen Labs", "CTO", "+39 02 5550 0103"},
	{"c-2004", "Dmitri Volkov", "dvolkov@bluepeak.example", "Blue Peak Logistics", "Sales Director", "+1 312 555 0104"},
	{"c-2005", "Elif Yilmaz", "elif.yilmaz@harborfoods.example", "Harbor Foods", "Marketing Lead", "+90 212 555 0105"},
	{"c-2006", "Femi Adeyemi", "femi@quantaform.example", "Quantaform", "Founder", "+234 1 555 0106"},
	{"c-2007", "Greta Nilsson", "greta.nilsson@fjordbank.example", "Fjord Bank", "Product Owner", "+46 8 555 0107"},
	{"c-2008", "Hiro Tanaka", "h.tanaka@kitemobility.example", "Kite Mobility", "VP Sales", "+81 3 5550 0108"},
	{"c-2009", "Isabel Moreno", "isabel@solanaenergy.example", "Solana Energy", "Finance Manager", "+34 91 555 0109"},
	{"c-2010", "Jonas Weber", "jonas.weber@tannerwerk.example", "Tannerwerk", "IT Manager", "+49 30 5550 0110"},
	{"c-2011", "Kaja Nowak", "kaja.nowak@vistula.example", "Vistula Software", "Account Executive", "+48 22 555 0111"},
	{"c-2012", "Liam O'Connor", "liam@oconnorbuild.example", "O'Connor Build", "Project Manager", "+353 1 555 0112"},
	{"c-2013", "Maya Patel", "maya.patel@brightpath.example", "Brightpath Health", "Chief of Staff", "+44 20 5550 0113"},
	{"c-2014", "Nils Berg", "nils@polarfish.example", "Polar Fish AS", "Buyer", "+47 22 555 0114"},
	{"c-2015", "Olivia Chen", "olivia.chen@redwoodai.example", "Redwood AI", "Data Scientist", "+1 650 555 0115"},
	{"c-2016", "Pierre Laurent", "p.laurent@maisonverte.example", "Maison Verte", "Store Manager", "+33 1 5550 0116"},
	{"c-2017", "Qi Wang", "qi.wang@jadeharbor.example", "Jade Harbor", "Supply Chain Analyst", "+852 5550 0117"},
	{"c-2018", "Rosa Jimenez", "rosa@cactuscloud.example", "Cactus Cloud", "Customer Success Lead", "+52 55 5550 0118"},
	{"c-2019", "Sven Larsen", "sven.larsen@nordlys.example", "Nordlys Media", "Editor in Chief", "+45 33 555 0119"},
	{"c-2020", "Tara Singh", "tara.singh@monsoonretail.example", "Monsoon Retail", "Head of E-commerce", "+91 22 5550 0120"},
	// The README's JSON containment example, {"job_title": "Director"}, finds her.
	{"c-2021", "Uma Rao", "uma.rao@saffronsystems.example", "Saffron Systems", "Director", "+91 80 5550 0121"},
}

var demoLeadStatuses = []string{"new", "open", "in_progress", "qualified", "customer"}

// snapshot is the contact as the CRM describes it at revision rev: a phone
// number from revision 2 (cleared to null before), a promotion at 3.
func (c demoContact) snapshot(rev int) map[string]any {
	s := map[string]any{"name": c.name, "email": c.email, "company": c.company, "job_title": c.title,
		"lead_status": demoLeadStatuses[min(rev, len(demoLeadStatuses))-1], "phone": nil}
	if rev >= 2 {
		s["phone"] = c.phone
	}
	if rev >= 3 {
		s["job_title"] = "Senior " + c.title
	}
	return s
}

// demoRevisions is how many revisions the CRM sends for the i-th contact: 1 to 4.
func demoRevisions(i int) int { return 1 + i%4 }

// demoPlan builds the history one delivery at a time.
type demoPlan struct{ steps []*demoStep }

func (p *demoPlan) add(s *demoStep) *demoStep {
	if s.id == "" {
		s.id = fmt.Sprintf("%s-evt-%04d", s.provider, len(p.steps)+1)
	}
	p.steps = append(p.steps, s)
	return s
}

// record sends a snapshot event; rev < 0 sends no revision.
func (p *demoPlan) record(provider, typ, idField, id string, rev int, snap map[string]any) *demoStep {
	data := map[string]any{idField: id, "snapshot": snap}
	if rev >= 0 {
		data["revision"] = rev
	}
	return p.add(&demoStep{provider: provider, typ: typ, data: data})
}

func (p *demoPlan) contact(provider string, c demoContact, rev int) *demoStep {
	return p.record(provider, "contact.snapshot", "contact_id", c.id, rev, c.snapshot(rev))
}

func (p *demoPlan) resend(s *demoStep) *demoStep {
	return p.add(&demoStep{provider: s.provider, id: s.id, resend: s})
}

// crmRound sends revision r of every contact that has one, except where
// skip says otherwise (it may send something else instead).
func (p *demoPlan) crmRound(r int, skip func(i int, c demoContact) bool) {
	for i, c := range demoContacts {
		if r > demoRevisions(i) || (skip != nil && skip(i, c)) {
			continue
		}
		p.contact(Provider, c, r)
	}
}

type demoDeal struct{ id, name, contact string }

var demoDeals = []demoDeal{
	{"d-5001", "Northwind annual plan", "c-2001"},
	{"d-5002", "Lumen Labs pilot", "c-2003"},
	{"d-5003", "Blue Peak fleet rollout", "c-2004"},
	{"d-5004", "Kite Mobility expansion", "c-2008"},
	{"d-5005", "Redwood AI data add-on", "c-2015"},
	{"d-5006", "Monsoon Retail renewal", "c-2020"},
}

var demoDealStages = []string{"qualification", "proposal", "negotiation", "closed_won"}

func (p *demoPlan) deal(i, rev int) *demoStep {
	d := demoDeals[i]
	snap := map[string]any{"name": d.name, "contact_id": d.contact, "amount": 4800 + 1200*i + 600*rev,
		"currency": "EUR", "stage": demoDealStages[min(rev, len(demoDealStages))-1], "close_date": nil}
	if rev >= 3 {
		snap["close_date"] = "2026-12-" + fmt.Sprintf("%02d", 10+i)
	}
	return p.record("billing", "deal.snapshot", "object_id", d.id, rev, snap)
}

// enrichment is what the enrich provider knows about a contact.
func demoEnrichment(i, rev int) map[string]any {
	sizes := []string{"11-50", "51-200", "201-500", "1001-5000"}
	industries := []string{"Logistics", "Software", "Retail", "Energy", "Health care", "Media"}
	s := map[string]any{"company_size": sizes[(i+rev)%len(sizes)], "industry": industries[i%len(industries)],
		"linkedin_url": "https://www.linkedin.example/in/" + strings.ToLower(strings.Fields(demoContacts[i].name)[0]) + "-" + demoContacts[i].id}
	if rev >= 2 {
		s["employees_estimate"] = 40 + 35*i
	}
	return s
}

func (p *demoPlan) enrich(i, rev int) *demoStep {
	return p.record("enrich", "contact.snapshot", "contact_id", demoContacts[i].id, rev, demoEnrichment(i, rev))
}

// demoHistory is the demo's deliveries in the order they arrive.
func demoHistory() []*demoStep {
	p := &demoPlan{}
	byID := func(id string) demoContact {
		for _, c := range demoContacts {
			if c.id == id {
				return c
			}
		}
		panic("no demo contact " + id)
	}

	// Day one: every contact's first revision; two timed-out deliveries are retried.
	var firsts []*demoStep
	for i, c := range demoContacts {
		firsts = append(firsts, p.contact(Provider, c, 1))
		if i == 2 || i == 9 {
			p.resend(firsts[i])
		}
	}
	for i := range demoDeals {
		p.deal(i, 1)
	}
	for i := range 6 {
		p.enrich(i, 1)
	}

	// Revision 2. Kite Mobility's (c-2008) is held up somewhere and arrives
	// last; Blue Peak's (c-2004) revision 3 overtakes its revision 2.
	p.crmRound(2, func(i int, c demoContact) bool {
		switch c.id {
		case "c-2008":
			return true
		case "c-2004":
			p.contact(Provider, c, 3)
			return true
		}
		return false
	})
	p.add(&demoStep{provider: Provider, id: "crm-evt-forged", typ: "contact.snapshot", status: http.StatusUnauthorized,
		secret: provider.NewStandardSecret(), data: map[string]any{"contact_id": "c-2001", "revision": 9,
			"snapshot": map[string]any{"name": "Ada Lindqvist", "lead_status": "customer"}}})
	// Website signals carry no revision: recorded, never applied.
	for _, i := range []int{4, 10, 14} {
		p.record("enrich", "contact.snapshot", "contact_id", demoContacts[i].id, -1,
			map[string]any{"website_visits": 3 + 4*i, "last_seen_page": "/pricing"})
	}
	for i := range demoDeals {
		if i == 2 {
			p.deal(i, 3) // overtakes revision 2
			continue
		}
		p.deal(i, 2)
	}

	// The team connects a destination for its warehouse, then pauses it while
	// the consumer moves: the changes since wait for it.
	p.act("create and pause the demo destination", demoDestination)

	// Revision 3, with a malformed event and a provider bug that reuses an
	// event id for other content.
	p.crmRound(3, func(i int, c demoContact) bool {
		switch c.id {
		case "c-2004":
			p.contact(Provider, c, 2) // late: stale
			return true
		case "c-2012":
			p.contact(Provider, c, 4) // overtakes revision 3
			return true
		}
		return false
	})
	p.add(&demoStep{provider: Provider, typ: "contact.snapshot", data: map[string]any{"revision": 3,
		"snapshot": map[string]any{"name": "Unknown lead", "email": "lead@unknown.example"}}})
	p.add(&demoStep{provider: Provider, id: firsts[5].id, typ: "contact.snapshot", data: map[string]any{
		"contact_id": demoContacts[5].id, "revision": 2, "snapshot": demoContacts[5].snapshot(2)}})
	p.record(Provider, "contact.snapshot", "contact_id", "c-2019", -1,
		map[string]any{"name": "Sven Larsen", "email": "sven@nordlys.example", "lead_status": "open"})

	// Refused before any event is read.
	p.add(&demoStep{provider: "enrich", typ: "contact.snapshot", status: http.StatusUnauthorized, age: 9 * time.Minute,
		data: map[string]any{"contact_id": "c-2002", "revision": 2, "snapshot": demoEnrichment(1, 2)}})
	p.add(&demoStep{provider: "billing", status: http.StatusRequestEntityTooLarge,
		raw: []byte(`{"type":"deal.snapshot","data":{"object_id":"d-5001","revision":4,"snapshot":{"attachment":"` +
			strings.Repeat("QUJD", web.DefaultMaxBody/4) + `"}}}`)})
	p.add(&demoStep{provider: Provider, status: http.StatusBadRequest,
		raw: []byte(`{"event":"contact.updated","contact":"c-2007","changes":{"lead_status":"qualified"}}`)})

	// Revision 4, then the stragglers: Kite Mobility's revision 2 and
	// O'Connor Build's revision 3 (stale), and two resyncs of unchanged
	// contacts (redundant).
	p.crmRound(4, func(i int, c demoContact) bool { return c.id == "c-2012" })
	p.contact(Provider, byID("c-2008"), 2)
	p.contact(Provider, byID("c-2012"), 3)
	p.contact(Provider, byID("c-2002"), demoRevisions(1))
	p.contact(Provider, byID("c-2015"), demoRevisions(14))
	resent := p.contact(Provider, byID("c-2011"), demoRevisions(10))
	p.resend(resent)

	// A second CRM workflow writes other snapshots under revisions already
	// accepted: revision conflicts for an operator to review.
	conflicting := map[string]map[string]any{
		"c-2004": {"job_title": "Regional Sales Director", "lead_status": "customer"},
		"c-2008": {"phone": "+81 3 5550 9999"},
		"c-2016": {"job_title": "Head of Retail Operations"},
		"c-2020": {"lead_status": "unqualified", "email": "tara@monsoonretail.example"},
	}
	for _, id := range []string{"c-2004", "c-2008", "c-2016", "c-2020"} {
		snap := byID(id).snapshot(4)
		for k, v := range conflicting[id] {
			snap[k] = v
		}
		p.record(Provider, "contact.snapshot", "contact_id", id, 4, snap)
	}

	for _, i := range []int{0, 2, 4} {
		p.enrich(i, 2)
	}
	p.add(&demoStep{provider: "enrich", typ: "contact.snapshot", data: map[string]any{
		"contact_id": demoContacts[5].id, "revision": -1, "snapshot": demoEnrichment(5, 1)}})
	for i := range demoDeals {
		if i != 2 {
			p.deal(i, 3)
		}
	}
	p.deal(2, 2) // late: stale
	p.deal(0, 4)
	// Billing's deal snapshots are switched off for a while: the deals sent
	// meanwhile are rejected, and replayed at the end (Seed); by then
	// Kite Mobility's deal has moved on to revision 5 past its rejected 4.
	p.act("disable billing's "+demoBillingScope.String(), demoScope(false))
	for _, i := range []int{1, 3, 5} {
		p.deal(i, 4)
	}
	p.act("enable billing's "+demoBillingScope.String(), demoScope(true))
	p.deal(3, 5)
	// A webinar: signups find or create people and their accounts; one
	// person signs up twice (redundant), one from a free-mail address.
	for i, l := range []map[string]any{
		{"email": "ada@northwind.example", "name": "Ada Lindqvist", "company": "Northwind", "campaign": "webinar-dec"},
		{"email": "Ben@Northwind.example", "name": "Ben Okafor", "company": "Northwind", "campaign": "webinar-dec"},
		{"email": "ada@northwind.example", "name": "Ada Lindqvist", "company": "Northwind", "campaign": "webinar-dec"},
		{"email": "mia@lumenlabs.example", "name": "Mia Chen", "company": "Lumen Labs", "campaign": "webinar-dec", "source": "linkedin"},
		{"email": "sam.rivera@gmail.com", "name": "Sam Rivera", "campaign": "webinar-dec"},
		{"email": "ada@northwind.example", "name": "Ada Lindqvist", "company": "Northwind", "campaign": "pricing-guide"},
	} {
		p.add(&demoStep{provider: Provider, id: fmt.Sprintf("signup-%02d", i+1), typ: "lead.signup", data: l})
	}
	return p.steps
}
