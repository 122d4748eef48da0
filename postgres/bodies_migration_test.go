package postgres

import (
	"context"
	"strings"
	"testing"
)

// Migration 00031 blanks the SessionId of Salesforce bodies stored before
// the webhook blanked it (review 3, M2): the element stays, other kinds'
// bodies and sObject fields of that name keep every byte.
func TestMigrationBlanksStoredSessionIds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, p := migratedTo(t, 29)
	const sf = `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>` +
		`<notifications xmlns="http://soap.sforce.com/2005/09/outbound"><OrganizationId>00D5e000000AbCdEAK</OrganizationId>` +
		`<SessionId xmlns="http://soap.sforce.com/2005/09/outbound">00D5e000000AbCd!AQ4AQFakeSession</SessionId><Notification><Id>n1</Id>` +
		`<sObject xsi:type="sf:Contact" xmlns:sf="urn:sobject.enterprise.soap.sforce.com"><sf:Id>c1</sf:Id>` +
		`<sf:SessionId>a field</sf:SessionId></sObject></Notification></notifications></soapenv:Body></soapenv:Envelope>`
	const std = `{"type":"contact.snapshot","data":{"note":"<SessionId>not a credential</SessionId>"}}`
	_, err := pool.Exec(ctx, `
WITH t AS (INSERT INTO tenants (slug, name) VALUES ('acme', '') RETURNING id),
     p AS (INSERT INTO providers (tenant_id, name, kind) SELECT id, 'sf', 'salesforce' FROM t
           UNION ALL SELECT id, 'crm', 'standard' FROM t RETURNING tenant_id, id, kind)
INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, body)
SELECT tenant_id, gen_random_uuid(), now(), id, 200, 'valid', convert_to(CASE kind WHEN 'standard' THEN $2 ELSE $1 END, 'UTF8')
FROM p, generate_series(1, 2)`, sf, std)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 31); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT p.kind, convert_from(d.body, 'UTF8') FROM deliveries d
	    JOIN providers p ON p.tenant_id = d.tenant_id AND p.id = d.provider_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var kind, body string
		if err := rows.Scan(&kind, &body); err != nil {
			t.Fatal(err)
		}
		want := std
		if kind != "standard" {
			want = strings.Replace(sf, "00D5e000000AbCd!AQ4AQFakeSession", "", 1)
		}
		if body != want {
			t.Errorf("%s body after 00031:\n%s\nwant\n%s", kind, body, want)
		}
		n++
	}
	if rows.Err() != nil || n != 4 {
		t.Fatalf("%d deliveries (%v), want 4", n, rows.Err())
	}
}
