package provider

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

const sfSession = "00D5e000000AbCd!AQ4AQFakeSessionIdThatMustNotBeStored.x9"

// TestSalesforceSessionIdBlanked: the SessionId of an outbound message (a
// live session of the sending user) is blanked, the element kept, and the
// blanked body parses into the same events; other elements named SessionId
// (an sObject field) and bodies without one are left alone.
func TestSalesforceSessionIdBlanked(t *testing.T) {
	t.Parallel()
	contact := sfFixture(t, "contact.xml")
	for name, session := range map[string]string{
		"plain":      `<SessionId>` + sfSession + `</SessionId>`,
		"attributes": `<SessionId xmlns="http://soap.sforce.com/2005/09/outbound" a="b" >` + sfSession + `</SessionId >`,
		"escaped":    `<SessionId>` + strings.Replace(sfSession, "!", "&#33;", 1) + `</SessionId>`,
		"cdata":      `<SessionId><![CDATA[` + sfSession + `]]></SessionId>`,
	} {
		t.Run(name, func(t *testing.T) {
			body := bytes.Replace(contact, []byte(`<SessionId xsi:nil="true"/>`), []byte(session), 1)
			body = bytes.Replace(body, []byte(`<sf:FirstName>Ada</sf:FirstName>`),
				[]byte(`<sf:FirstName>Ada</sf:FirstName><sf:SessionId>kept-field</sf:SessionId>`), 1)
			got := RedactBody("salesforce", body)
			if bytes.Contains(got, []byte("AQ4AQFake")) {
				t.Fatalf("session id kept:\n%s", got)
			}
			if !bytes.Contains(got, []byte("<SessionId")) || !bytes.Contains(got, []byte("</SessionId")) ||
				!bytes.Contains(got, []byte("<sf:SessionId>kept-field</sf:SessionId>")) {
				t.Fatalf("the element or the sObject field is gone:\n%s", got)
			}
			p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "salesforce", Config: map[string]string{"org_id": sfOrg}}}
			r, _ := http.NewRequest(http.MethodPost, "/", nil)
			want, err := salesforce{}.Parse(r, body, p)
			if err != nil {
				t.Fatal(err)
			}
			events, err := salesforce{}.Parse(r, got, p)
			if err != nil || !reflect.DeepEqual(events, want) {
				t.Fatalf("blanked body parses to %+v (%v), want %+v", events, err, want)
			}
		})
	}
	// Nothing to blank: the same bytes.
	for _, body := range [][]byte{contact, []byte("not xml <SessionId>x"), nil} {
		if got := RedactBody("salesforce", body); !bytes.Equal(got, body) {
			t.Errorf("RedactBody changed %q into %q", body, got)
		}
	}
	// Kinds that declare no body credentials keep every byte.
	std := []byte(`{"type":"contact.snapshot","data":{"SessionId":"x"}}`)
	if got := RedactBody("standard", std); !bytes.Equal(got, std) {
		t.Errorf("standard body changed: %s", got)
	}
}
