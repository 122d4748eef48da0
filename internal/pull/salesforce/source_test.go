package salesforce

// The source against a fake org (salesforcetest) built from the documented
// requests and answers:
//   - client credentials flow: https://help.salesforce.com/s/articleView?id=xcloud.remoteaccess_oauth_client_credentials_flow.htm
//     and https://developer.salesforce.com/docs/atlas.en-us.chatterapi.meta/chatterapi/quickstart_connecting.htm
//   - Query and nextRecordsUrl: https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm
//   - SOQL dateTime literals: https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_dateformats.htm
//   - sObject Get Deleted: https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_getdeleted.htm
//     and https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_get_deleted.htm
//   - Describe Global: https://developer.salesforce.com/docs/platform/api-rest/guide/dome-describeglobal.md
//   - errors (401 INVALID_SESSION_ID, 403 REQUEST_LIMIT_EXCEEDED): https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm
//   - Sforce-Limit-Info: https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/headers_api_usage.htm

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/pull/salesforce/salesforcetest"
	"github.com/tidemark/tidemark/internal/testlog"
)

// base is the start of the tests' windows.
var base = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

type fixture struct {
	org *salesforcetest.Server
	src *Source
	log *testlog.Buffer
}

// setup is a fake org and a source for it logging at debug level, whose
// pauses without Retry-After are short.
func setup(t *testing.T, opts ...Option) fixture {
	t.Helper()
	org := salesforcetest.New(t)
	buf := &testlog.Buffer{}
	src, err := New(org.Credentials(), slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), opts...)
	if err != nil {
		t.Fatal(err)
	}
	src.wait = 10 * time.Millisecond
	return fixture{org: org, src: src, log: buf}
}

// pullAll pulls objectType over [from, to) and returns the pages emitted.
func (f fixture) pullAll(t *testing.T, objectType string, from, to time.Time) ([][]domain.Event, error) {
	t.Helper()
	var pages [][]domain.Event
	err := f.src.Pull(context.Background(), objectType, from, to, func(events []domain.Event) error {
		pages = append(pages, events)
		return nil
	})
	return pages, err
}

func ids(pages [][]domain.Event) []string {
	var out []string
	for _, p := range pages {
		for _, e := range p {
			out = append(out, e.ObjectID)
		}
	}
	return out
}

// count is how many requests the org answered with path prefix and status.
func count(org *salesforcetest.Server, prefix string, status int) int {
	n := 0
	for _, r := range org.Requests() {
		if strings.HasPrefix(r.Path, prefix) && r.Status == status {
			n++
		}
	}
	return n
}

func TestNewChecksCredentials(t *testing.T) {
	t.Parallel()
	good := pull.Credentials{ClientID: "3MVG9", ClientSecret: "s3cret", LoginURL: "https://acme.my.salesforce.com"}
	src, err := New(good, nil)
	if err != nil || src.version != DefaultAPIVersion || src.share != pull.DefaultBudgetShare {
		t.Fatalf("New = %+v, %v; want the default version and share", src, err)
	}
	for _, tc := range []struct {
		name string
		edit func(*pull.Credentials)
		opt  Option
		want string
	}{
		{"no client id", func(c *pull.Credentials) { c.ClientID = " " }, nil, "client id and a client secret"},
		{"no secret", func(c *pull.Credentials) { c.ClientSecret = "" }, nil, "client id and a client secret"},
		{"no login URL", func(c *pull.Credentials) { c.LoginURL = "" }, nil, "login URL: required"},
		{"http", func(c *pull.Credentials) { c.LoginURL = "http://acme.my.salesforce.com" }, nil, "login URL: must be https"},
		{"a path", func(c *pull.Credentials) { c.LoginURL = "https://acme.my.salesforce.com/services" }, nil, "site's address alone"},
		{"a password", func(c *pull.Credentials) { c.LoginURL = "https://u:pw@acme.my.salesforce.com" }, nil, "site's address alone"},
		{"version", func(c *pull.Credentials) { c.APIVersion = "62.0" }, nil, `API version "62.0" is not like v62.0`},
		{"share", func(c *pull.Credentials) { c.BudgetShare = 1.5 }, nil, "budget share 1.5"},
		{"field", func(*pull.Credentials) {}, WithFields("contact", "Account.Name"), `"Account.Name" is not a field's API name`},
		{"object type", func(*pull.Credentials) {}, WithFields("Contact", "Email"), `object type "Contact" is not a lower-case`},
		{"revision field", func(*pull.Credentials) {}, WithRevisionField("System Modstamp"), "revision field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := good
			tc.edit(&c)
			var opts []Option
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			_, err := New(c, nil, opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error %q repeats a secret", err)
			}
		})
	}
	// http is for tests on loopback, with AllowPrivate.
	c := good
	c.LoginURL, c.AllowPrivate = "http://127.0.0.1:8080", true
	if _, err := New(c, nil); err != nil {
		t.Fatalf("http with AllowPrivate: %v", err)
	}
}

func TestTokenFetchedOnceAndCached(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.org.Put("Contact", "003A", base.Add(time.Minute), nil)
	for range 3 {
		if pages, err := f.pullAll(t, "contact", base, base.Add(time.Hour)); err != nil || len(ids(pages)) != 1 {
			t.Fatalf("pull: %v %v", ids(pages), err)
		}
	}
	if n := len(f.org.Tokens()); n != 1 {
		t.Fatalf("%d tokens fetched for three pulls, want 1", n)
	}
}

func TestTokenRenewedAfterExpiry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for i, id := range []string{"003A", "003B", "003C", "003D", "003E"} {
		f.org.Put("Contact", id, base.Add(time.Duration(i)*time.Minute), nil)
	}
	// The session ends mid-pull: after the first page, before the next.
	var got []string
	err := f.src.Pull(context.Background(), "contact", base, base.Add(time.Hour), func(events []domain.Event) error {
		if len(got) == 0 {
			f.org.ExpireToken()
		}
		for _, e := range events {
			got = append(got, e.ObjectID)
		}
		return nil
	})
	if err != nil || len(got) != 5 {
		t.Fatalf("pull across the expiry: %v %v", got, err)
	}
	if n := len(f.org.Tokens()); n != 2 {
		t.Fatalf("%d tokens fetched, want 2", n)
	}
	if n := count(f.org, "/services/data/v62.0/query/01g", http.StatusUnauthorized); n != 1 {
		t.Fatalf("%d answers of 401 to the next page, want 1 (the expired token, once)", n)
	}
	if !strings.Contains(f.log.String(), "INVALID_SESSION_ID") {
		t.Fatalf("the renewal was not logged:\n%s", f.log)
	}
}

func TestWrongClientSecret(t *testing.T) {
	t.Parallel()
	org := salesforcetest.New(t)
	c := org.Credentials()
	c.ClientSecret = "not-the-secret-0123456789"
	src, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fixture{org: org, src: src}.pullAll(t, "contact", base, base.Add(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "400 invalid_client") {
		t.Fatalf("pull = %v, want the token endpoint's invalid_client", err)
	}
	if strings.Contains(err.Error(), c.ClientSecret) {
		t.Fatalf("the error %q repeats the client secret", err)
	}
	if n := count(org, "/services/data/", http.StatusOK); n != 0 {
		t.Fatalf("%d REST requests without a token", n)
	}
}

func TestPagingFollowsNextRecordsURL(t *testing.T) {
	t.Parallel()
	f := setup(t)
	want := []string{"003A", "003B", "003C", "003D", "003E"}
	// Added newest first: the answer is ordered by the query, not storage.
	for i := len(want) - 1; i >= 0; i-- {
		f.org.Put("Contact", want[i], base.Add(time.Duration(i)*time.Minute), map[string]any{"LastName": "L" + want[i]})
	}
	pages, err := f.pullAll(t, "contact", base, base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 3 || strings.Join(ids(pages), ",") != strings.Join(want, ",") {
		t.Fatalf("pages %v (%d), want %v in 3 pages of 2", ids(pages), len(pages), want)
	}
	if n := count(f.org, "/services/data/v62.0/query/01g", http.StatusOK); n != 2 {
		t.Fatalf("%d nextRecordsUrl requests, want 2", n)
	}
}

func TestWindowIsExact(t *testing.T) {
	t.Parallel()
	f := setup(t)
	from := base.Add(500 * time.Millisecond)
	to := base.Add(time.Hour + 250*time.Millisecond)
	for id, at := range map[string]time.Time{
		"before":        base.Add(-time.Minute),
		"same-second":   base.Add(200 * time.Millisecond), // in the query's whole second, before from
		"at-from":       from,
		"inside":        base.Add(30 * time.Minute),
		"just-before":   to.Add(-time.Millisecond),
		"at-to":         to,
		"next-second":   base.Add(time.Hour + 900*time.Millisecond),
		"an-hour-later": base.Add(2 * time.Hour),
	} {
		f.org.Put("Contact", id, at, nil)
	}
	f.org.Delete("Contact", "before", base.Add(-30*time.Second)) // same minute as from's
	f.org.Delete("Contact", "inside", base.Add(45*time.Minute))
	f.org.Delete("Contact", "at-to", to.Add(20*time.Second)) // same minute as to's
	pages, err := f.pullAll(t, "contact", from, to)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(pages), ","); got != "at-from,inside,just-before" {
		t.Fatalf("pulled %s, want at-from, inside (its deletion) and just-before", got)
	}
	for _, r := range f.org.Requests() {
		if strings.HasSuffix(r.Path, "/query") && !strings.Contains(r.Query, "SystemModstamp+%3E%3D+2026-11-29T09%3A00%3A00Z") {
			t.Errorf("query %s: want whole-second dateTime literals", r.Query)
		}
	}
}

func TestDeletions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.org.Put("Contact", "003A", base.Add(10*time.Minute), nil)
	f.org.Put("Contact", "003B", base.Add(40*time.Minute), nil)
	f.org.Put("Contact", "003X", base.Add(-time.Hour), nil)
	deletedAt := base.Add(20*time.Minute + 1500*time.Millisecond)
	f.org.Delete("Contact", "003X", deletedAt)
	pages, err := f.pullAll(t, "contact", base, base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// Oldest first: the deletion at 09:20 between the changes at 09:10
	// and 09:40.
	if got := strings.Join(ids(pages), ","); got != "003A,003X,003B" {
		t.Fatalf("pulled %s, want 003A,003X,003B", got)
	}
	d := pages[0][1]
	micros := deletedAt.UnixMicro()
	if d.Scope != (domain.ScopeName{ObjectType: "contact", Action: "deletion"}) || d.Property != domain.PropertyDeleted ||
		string(d.Snapshot) != "{}" || d.Revision == nil || *d.Revision != micros || !d.RevisionTime.Equal(deletedAt) ||
		d.EventID != "backfill:contact:003X:$deleted:"+strconv.FormatInt(micros, 10) || d.Timestamp != "2026-11-29T09:20:01.500Z" {
		t.Fatalf("deletion event %+v (revision %d), want the deletion of 003X at %d", d, *d.Revision, micros)
	}
	if !strings.Contains(string(d.Payload), `"deletedDate":"2026-11-29T09:20:01.500+0000"`) {
		t.Fatalf("payload %s, want the deleted record as returned", d.Payload)
	}
}

func TestCustomObjectsAreFoundByDescribe(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.org.Put("Merchandise__c", "a00A", base.Add(time.Minute), map[string]any{"Price__c": nil})
	for range 2 {
		pages, err := f.pullAll(t, "merchandise__c", base, base.Add(time.Hour))
		if err != nil || len(ids(pages)) != 1 || pages[0][0].Scope.ObjectType != "merchandise__c" {
			t.Fatalf("pull: %v %v", pages, err)
		}
	}
	describes := 0
	for _, r := range f.org.Requests() {
		if r.Path == "/services/data/v62.0/sobjects/" {
			describes++
		}
	}
	if describes != 1 {
		t.Fatalf("%d describe calls for two pulls, want 1", describes)
	}
	if _, err := f.pullAll(t, "invoice__c", base, base.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "no object type invoice__c") {
		t.Fatalf("an unknown type: %v", err)
	}
}

func TestRetriesWhatSalesforceAsksToRetry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.org.Put("Contact", "003A", base.Add(time.Minute), nil)
	f.org.FailNext(http.StatusTooManyRequests, "1")
	f.org.FailNext(http.StatusServiceUnavailable, "")
	f.org.FailNext(http.StatusForbidden, "") // REQUEST_LIMIT_EXCEEDED
	start := time.Now()
	pages, err := f.pullAll(t, "contact", base, base.Add(time.Hour))
	if err != nil || len(ids(pages)) != 1 {
		t.Fatalf("pull: %v %v", ids(pages), err)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("took %s: Retry-After: 1 was not honoured", took)
	}
	if !strings.Contains(f.log.String(), "trying again") {
		t.Fatalf("the retries were not logged:\n%s", f.log)
	}

	// Tries give out, and a Retry-After longer than the wait allowed fails
	// at once.
	f = setup(t)
	for range 6 {
		f.org.FailNext(http.StatusServiceUnavailable, "")
	}
	if _, err := f.pullAll(t, "contact", base, base.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "503 SERVER_UNAVAILABLE") {
		t.Fatalf("after 6 refusals: %v", err)
	}
	f = setup(t)
	f.org.FailNext(http.StatusTooManyRequests, "3600")
	start = time.Now()
	if _, err := f.pullAll(t, "contact", base, base.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "asks to wait 1h0m0s") || time.Since(start) > 5*time.Second {
		t.Fatalf("Retry-After 3600: %v after %s", err, time.Since(start))
	}
}

func TestStopsAtTheBudgetShare(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for i, id := range []string{"003A", "003B", "003C", "003D", "003E", "003F", "003G", "003H"} {
		f.org.Put("Contact", id, base.Add(time.Duration(i)*time.Minute), nil)
	}
	// Each REST request adds one: getDeleted makes 8/20, the pages 9, 10
	// (half: still allowed) and 11, over half, so the fourth page is never
	// asked for.
	f.org.SetUsage(7, 20)
	pages, err := f.pullAll(t, "contact", base, base.Add(time.Hour))
	if !errors.Is(err, ErrBudgetSpent) || !strings.Contains(err.Error(), "used 11 of its 20 daily API requests, more than the 50%") {
		t.Fatalf("pull = %v, want ErrBudgetSpent naming 11 of 20", err)
	}
	if got := strings.Join(ids(pages), ","); got != "003A,003B,003C,003D,003E,003F" {
		t.Fatalf("emitted %s before stopping, want the three pages read", got)
	}
	if n := count(f.org, "/services/data/", http.StatusOK); n != 4 {
		t.Fatalf("%d REST requests, want 4", n)
	}
}

// Neither the client secret nor an access token reaches the log, an event
// or an error, through sign-in, renewal, retries and a refusal.
func TestSecretsStayOut(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.org.Put("Contact", "003A", base.Add(time.Minute), map[string]any{"Email": "ada@example.com"})
	f.org.Put("Contact", "003B", base.Add(2*time.Minute), nil)
	f.org.Put("Contact", "003C", base.Add(3*time.Minute), nil)
	f.org.Delete("Contact", "003C", base.Add(4*time.Minute))
	var events []domain.Event
	var errs []string
	for i := range 3 {
		f.org.FailNext(http.StatusTooManyRequests, "0")
		if i > 0 {
			f.org.ExpireToken()
		}
		pages, err := f.pullAll(t, "contact", base, base.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pages {
			events = append(events, p...)
		}
	}
	f.org.RotateSecret("rotated-on-the-other-side")
	f.org.ExpireToken()
	if _, err := f.pullAll(t, "contact", base, base.Add(time.Hour)); err == nil {
		t.Fatal("a pull with a rotated secret succeeded")
	} else {
		errs = append(errs, err.Error())
	}
	secrets := append(f.org.Tokens(), f.src.clientSecret)
	if len(secrets) != 4 {
		t.Fatalf("%d tokens issued, want 3", len(secrets)-1)
	}
	logged := f.log.String()
	if !strings.Contains(logged, "signed in") || !strings.Contains(logged, "level=DEBUG") {
		t.Fatalf("the log shows no sign-in or requests:\n%s", logged)
	}
	for _, secret := range secrets {
		if strings.Contains(logged, secret) {
			t.Errorf("the log holds a secret:\n%s", logged)
		}
		for _, e := range events {
			if strings.Contains(string(e.Payload), secret) || strings.Contains(string(e.Snapshot), secret) {
				t.Errorf("event %s holds a secret", e.EventID)
			}
		}
		for _, msg := range errs {
			if strings.Contains(msg, secret) {
				t.Errorf("the error %q holds a secret", msg)
			}
		}
	}
	if len(events) != 9 {
		t.Fatalf("%d events, want 9", len(events))
	}
}
