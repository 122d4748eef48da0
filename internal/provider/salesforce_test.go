package provider

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

const sfOrg = "00D5e000000AbCdEAK"

func sfFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "salesforce", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sfNotifications wraps inner in a notifications call.
func sfNotifications(inner string) []byte {
	return []byte(`<?xml version="1.0"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>` +
		`<notifications xmlns="http://soap.sforce.com/2005/09/outbound">` + inner + `</notifications></soapenv:Body></soapenv:Envelope>`)
}

func TestSalesforceSetup(t *testing.T) {
	t.Parallel()
	secret, config, err := Setup("salesforce", "", map[string]string{"org_id": sfOrg})
	if err != nil || config["org_id"] != sfOrg || config["revision_field"] != "SystemModstamp" {
		t.Fatalf("setup: %q %v %v", secret, config, err)
	}
	// The token is generated: 24 random bytes, base64url, at least 128 bits.
	if raw, err := base64.RawURLEncoding.DecodeString(secret); err != nil || len(raw) != 24 {
		t.Fatalf("token %q is not 24 random bytes in base64url: %v", secret, err)
	}
	if again, _ := (salesforce{}).NewSecret(config); again == secret || len(again) != len(secret) {
		t.Fatalf("NewSecret = %q after %q, want another token", again, secret)
	}
	_, config, err = Setup("salesforce", "", map[string]string{"org_id": sfOrg[:15],
		"allowed_networks": "13.108.0.0/14, 2a01:111:f400::/48", "revision_field": "LastModifiedDate"})
	if err != nil || config["allowed_networks"] != "13.108.0.0/14,2a01:111:f400::/48" || config["revision_field"] != "LastModifiedDate" {
		t.Fatalf("setup with networks: %v %v", config, err)
	}
	for _, tc := range []struct {
		name, secret string
		config       map[string]string
		want         string
	}{
		{"secret", "whsec_abc", map[string]string{"org_id": sfOrg}, "salesforce providers take no --secret: Tidemark generates the token"},
		{"no org", "", nil, "--org-id is required for salesforce"},
		{"short org", "", map[string]string{"org_id": "00D5e000000AbC"}, `--org-id "00D5e000000AbC" is not a Salesforce organization id`},
		{"not an org", "", map[string]string{"org_id": "0035e00000Q7kLmAAB"}, "--org-id"},
		{"bad network", "", map[string]string{"org_id": sfOrg, "allowed_networks": "10.0.0.0/8,10.0.0.300/8"}, `--allowed-networks: "10.0.0.300/8" is not a CIDR network`},
		{"bad field", "", map[string]string{"org_id": sfOrg, "revision_field": "System Modstamp"}, "--revision-field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Setup("salesforce", tc.secret, tc.config)
			if domain.ErrorCode(err) != domain.EINVALID || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("%v, want EINVALID starting %q", err, tc.want)
			}
		})
	}
}

func TestSalesforceAuthenticateErrors(t *testing.T) {
	t.Parallel()
	contact := sfFixture(t, "contact.xml")
	org := map[string]string{"org_id": sfOrg}
	nets := map[string]string{"org_id": sfOrg, "allowed_networks": "13.108.0.0/14"}
	const token, previous = "4pQ1xZ8rT0b9mW2nV7cK5sHd3fGjLa6Y", "previous-token-still-active-000000"
	secrets := []string{token, previous}
	with := "/webhooks/acme/p?token=" + token
	runAuthCases(t, salesforce{}, []authCase{
		{name: "valid", config: org, secrets: secrets, target: with, body: contact, wantVerdict: domain.SignatureValid},
		{name: "valid with the previous token", config: org, secrets: secrets, target: "/webhooks/acme/p?token=" + previous, body: contact,
			wantVerdict: domain.SignatureValid},
		{name: "valid 15-character org", config: map[string]string{"org_id": sfOrg[:15]}, secrets: secrets, target: with, body: contact,
			wantVerdict: domain.SignatureValid},
		{name: "valid from an allowed network", config: nets, secrets: secrets, target: with, remoteAddr: "13.108.1.2:443", body: contact,
			wantVerdict: domain.SignatureValid},
		{name: "no token", config: org, secrets: secrets, body: contact,
			wantVerdict: domain.SignatureMissing, wantErr: "the outbound message's Endpoint URL must end in ?token="},
		{name: "empty token", config: org, secrets: secrets, target: "/webhooks/acme/p?token=", body: contact,
			wantVerdict: domain.SignatureMissing, wantErr: "the token query parameter is required"},
		{name: "wrong token", config: org, secrets: secrets, target: "/webhooks/acme/p?token=guess", body: contact,
			wantVerdict: domain.SignatureInvalid, wantErr: "the token query parameter does not match an active token of this provider"},
		{name: "token prefix", config: org, secrets: secrets, target: with[:len(with)-1], body: contact,
			wantVerdict: domain.SignatureInvalid, wantErr: "does not match"},
		{name: "no active token", config: org, target: with, body: contact,
			wantVerdict: domain.SignatureInvalid, wantErr: "does not match"},
		{name: "token, but not an outbound message", config: org, secrets: secrets, target: with, body: []byte(`{"hello":1}`),
			wantVerdict: domain.SignatureUnchecked},
		{name: "no token and not an outbound message", config: org, secrets: secrets, body: []byte(`{"hello":1}`),
			wantVerdict: domain.SignatureMissing, wantErr: "the token query parameter is required"},
		{name: "broken allowed networks", config: map[string]string{"org_id": sfOrg, "allowed_networks": "bogus"}, secrets: secrets, target: with,
			remoteAddr: "13.108.1.2:443", body: contact, wantVerdict: domain.SignatureInvalid, wantErr: "the provider's allowed_networks is invalid"},
		{name: "unreadable sender", config: nets, secrets: secrets, target: with, remoteAddr: "somewhere", body: contact,
			wantVerdict: domain.SignatureInvalid, wantErr: `sender address "somewhere" could not be read`},
		{name: "sender outside", config: nets, secrets: secrets, target: with, remoteAddr: "192.0.2.1:443", body: contact,
			wantVerdict: domain.SignatureInvalid, wantErr: "sender address 192.0.2.1 is outside the provider's allowed networks"},
		{name: "no OrganizationId", config: org, secrets: secrets, target: with, body: sfNotifications(`<Notification><Id>n</Id></Notification>`),
			wantVerdict: domain.SignatureMissing, wantErr: "the notifications envelope has no OrganizationId"},
		{name: "other organization", config: org, secrets: secrets, target: with, body: bytes.ReplaceAll(contact, []byte(sfOrg), []byte("00D5e000000ZzZzEAK")),
			wantVerdict: domain.SignatureInvalid, wantErr: "is not the organization configured for this provider"},
		{name: "no org configured", config: map[string]string{}, secrets: secrets, target: with, body: contact,
			wantVerdict: domain.SignatureInvalid, wantErr: "is not the organization configured"},
	})
}

// TestSalesforceTestDeliveryCarriesToken: the console's test event and the
// page's snippet authenticate with the token they are given.
func TestSalesforceTestDeliveryCarriesToken(t *testing.T) {
	t.Parallel()
	const token = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdl"
	config := map[string]string{"org_id": sfOrg, "revision_field": "SystemModstamp"}
	d, err := salesforce{}.TestDelivery("http://hooks.example.com/webhooks/acme/sf", token, config, testNow)
	if err != nil || d.Query != "token="+token {
		t.Fatalf("test delivery query %q: %v", d.Query, err)
	}
	r := httptest.NewRequest(http.MethodPost, "http://hooks.example.com/webhooks/acme/sf?"+d.Query, bytes.NewReader(d.Body))
	p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "salesforce", Config: config}, Secrets: []string{token}}
	if v, err := (salesforce{}).Authenticate(r, d.Body, p, testNow); v != domain.SignatureValid {
		t.Fatalf("test delivery refused: %s %v", v, err)
	}
	page := salesforce{}.SecretPage("http://hooks.example.com/webhooks/acme/sf", token, config)
	if want := "http://hooks.example.com/webhooks/acme/sf?token=" + token; page.EndpointURL != want || page.Secret != token || !page.CopyURL ||
		!strings.Contains(page.CurlExample, ShellQuote(want)) {
		t.Fatalf("secret page %+v", page)
	}
	if pp := (salesforce{}).ProviderPage(config); pp.EndpointSuffix != "?token=…" || !strings.Contains(pp.IssuedNotice, "Salesforce deliveries now need this URL") {
		t.Fatalf("provider page %+v", pp)
	}
}

func TestSalesforceParseErrors(t *testing.T) {
	t.Parallel()
	org := map[string]string{"org_id": sfOrg}
	note := `<OrganizationId>` + sfOrg + `</OrganizationId>`
	many := note + strings.Repeat(`<Notification><Id>n</Id></Notification>`, sfMaxNotes+1)
	runParseCases(t, salesforce{}, []parseCase{
		{name: "not UTF-8", config: org, body: []byte("<a>\xff</a>"), wantErr: "body is not valid UTF-8"},
		{name: "JSON", config: org, body: []byte(`{"event":"x"}`), wantErr: "body is not a Salesforce outbound message"},
		{name: "other XML", config: org, body: []byte(`<feed/>`), wantErr: "body is not a Salesforce outbound message"},
		{name: "empty", config: org, body: []byte("  \n"), wantErr: "body is not a complete XML document"},
		{name: "truncated", config: org, body: sfNotifications(note)[:120], wantErr: "body is not well-formed XML: XML syntax error on line 1: unexpected EOF"},
		{name: "malformed", config: org, body: []byte(`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"></wrong>`),
			wantErr: "body is not well-formed XML"},
		{name: "empty body element", config: org, body: []byte(`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body/></soapenv:Envelope>`),
			wantErr: "body is not a Salesforce outbound message"},
		{name: "no notification", config: org, body: sfNotifications(note), wantErr: "the notifications envelope has no Notification element"},
		{name: "two organizations", config: org, body: sfNotifications(note + note + `<Notification><Id>n</Id></Notification>`),
			wantErr: "the notifications envelope has more than one OrganizationId"},
		{name: "too many notifications", config: org, body: sfNotifications(many), wantErr: "more than 100 Notification elements"},
		{name: "other organization", config: map[string]string{"org_id": "00D5e000000ZzZzEAK"}, body: sfFixture(t, "contact.xml"),
			wantErr: "OrganizationId is not the organization configured for this provider"},
	})
}
