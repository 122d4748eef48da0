package provider

import (
	"bytes"
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
	if err != nil || secret != "" || config["org_id"] != sfOrg || config["revision_field"] != "SystemModstamp" {
		t.Fatalf("setup: %q %v %v", secret, config, err)
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
		{"secret", "whsec_abc", map[string]string{"org_id": sfOrg}, "salesforce outbound messages carry no signature; use --org-id"},
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
	runAuthCases(t, salesforce{}, []authCase{
		{name: "valid", config: org, body: contact, wantVerdict: domain.SignatureValid},
		{name: "valid 15-character org", config: map[string]string{"org_id": sfOrg[:15]}, body: contact, wantVerdict: domain.SignatureValid},
		{name: "valid from an allowed network", config: nets, remoteAddr: "13.108.1.2:443", body: contact, wantVerdict: domain.SignatureValid},
		{name: "not an outbound message", config: org, body: []byte(`{"hello":1}`), wantVerdict: domain.SignatureUnchecked},
		{name: "broken allowed networks", config: map[string]string{"org_id": sfOrg, "allowed_networks": "bogus"}, remoteAddr: "13.108.1.2:443",
			body: contact, wantVerdict: domain.SignatureInvalid, wantErr: "the provider's allowed_networks is invalid"},
		{name: "unreadable sender", config: nets, remoteAddr: "somewhere", body: contact,
			wantVerdict: domain.SignatureInvalid, wantErr: `sender address "somewhere" could not be read`},
		{name: "sender outside", config: nets, remoteAddr: "192.0.2.1:443", body: contact,
			wantVerdict: domain.SignatureInvalid, wantErr: "sender address 192.0.2.1 is outside the provider's allowed networks"},
		{name: "no OrganizationId", config: org, body: sfNotifications(`<Notification><Id>n</Id></Notification>`),
			wantVerdict: domain.SignatureMissing, wantErr: "the notifications envelope has no OrganizationId"},
		{name: "other organization", config: org, body: bytes.ReplaceAll(contact, []byte(sfOrg), []byte("00D5e000000ZzZzEAK")),
			wantVerdict: domain.SignatureInvalid, wantErr: "is not the organization configured for this provider"},
		{name: "no org configured", config: map[string]string{}, body: contact,
			wantVerdict: domain.SignatureInvalid, wantErr: "is not the organization configured"},
	})
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
