package provider

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/netlist"
)

// Salesforce outbound messages: a SOAP 1.1 "notifications" call carrying up
// to 100 Notification elements, each with its notification Id and an sObject
// holding the fields picked for the message. Salesforce signs nothing, and
// the OrganizationId is no secret (it appears in Web-to-Lead forms), so every
// provider has a random token that the Endpoint URL carries as its token
// query parameter: a delivery must carry an active token, come from an
// allowed network when any are set, and name the provider's organization.
// Salesforce retries until it reads the exact notificationsResponse with Ack
// true.

const (
	soapEnvNS       = "http://schemas.xmlsoap.org/soap/envelope/"
	sfOutboundNS    = "http://soap.sforce.com/2005/09/outbound"
	sfMaxNotes      = 100 // maxOccurs of Notification in the WSDL
	sfDefaultRevKey = "SystemModstamp"
)

// salesforceAck is the acknowledgement Salesforce waits for; anything else,
// a bare 200 included, makes it retry the whole message.
const salesforceAck = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">
 <soapenv:Body>
  <notificationsResponse xmlns="http://soap.sforce.com/2005/09/outbound">
   <Ack>true</Ack>
  </notificationsResponse>
 </soapenv:Body>
</soapenv:Envelope>
`

var (
	sfOrgIDPattern      = regexp.MustCompile(`^00D[A-Za-z0-9]{12}([A-Za-z0-9]{3})?$`)
	sfFieldNamePattern  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,79}$`)
	sfObjectTypePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,99}$`)
)

func init() { Register(salesforce{}) }

// salesforce handles kind "salesforce".
type salesforce struct{}

func (salesforce) Name() string { return "salesforce" }

// DefaultMaxBody is 5 MiB: an envelope of 100 notifications carrying many
// fields each outgrows the 1 MiB of other kinds.
func (salesforce) DefaultMaxBody() int64 { return 5 << 20 }

// The connect form's fields, which setup refusals name.
var (
	sfOrgField = Field{Name: "org_id", Config: "org_id", Label: "Organization Id", Flag: "--org-id", Input: "text", MaxLength: 18,
		Usage:  "salesforce: the OrganizationId every outbound message must carry (required for salesforce)",
		Hint:   "Required: 15 or 18 characters starting with 00D (Setup, Company Information). Every outbound message must carry it.",
		HintID: "sf-org-hint"}
	sfNetworksField = Field{Name: "allowed_networks", Config: "allowed_networks", Label: "Allowed networks", Flag: "--allowed-networks", Input: "text",
		Usage:   "salesforce: comma-separated CIDRs allowed to send (default: any)",
		Caption: "Allowed networks (optional)",
		Hint:    "Comma-separated CIDRs, for example 13.108.0.0/14; empty accepts any sender address.",
		HintID:  "sf-net-hint"}
	sfRevisionField = Field{Name: "revision_field", Config: "revision_field", Label: "Revision field", Flag: "--revision-field", Input: "text",
		Usage:       "salesforce: sObject field used as the revision (default SystemModstamp)",
		Placeholder: sfDefaultRevKey}
)

func (salesforce) Setup(secret string, config map[string]string) (string, map[string]string, error) {
	if secret != "" {
		const msg = "salesforce providers take no %s: Tidemark generates the token their webhook URL carries (and a new one on rotation)"
		return "", nil, &FieldError{Field: "secret", Flag: "--secret", Label: "Secret",
			Message: fmt.Sprintf(msg, "--secret"), FormMessage: fmt.Sprintf(msg, "secret")}
	}
	out := clone(config)
	org := strings.TrimSpace(out["org_id"])
	if org == "" {
		return "", nil, fieldErrorf(sfOrgField, "%s is required for salesforce: the OrganizationId (15 or 18 characters starting with 00D) every outbound message must carry")
	}
	if !sfOrgIDPattern.MatchString(org) {
		return "", nil, fieldErrorf(sfOrgField, "%s %q is not a Salesforce organization id: expected 15 or 18 letters and digits starting with 00D", org)
	}
	out["org_id"] = org
	if raw := strings.TrimSpace(out["allowed_networks"]); raw != "" {
		prefixes, err := netlist.Parse(raw)
		if err != nil {
			return "", nil, fieldErrorf(sfNetworksField, "%s: %v", err)
		}
		list := make([]string, len(prefixes))
		for i, p := range prefixes {
			list[i] = p.String()
		}
		out["allowed_networks"] = strings.Join(list, ",")
	} else {
		delete(out, "allowed_networks")
	}
	field := strings.TrimSpace(out["revision_field"])
	if field == "" {
		field = sfDefaultRevKey
	}
	if !sfFieldNamePattern.MatchString(field) {
		return "", nil, fieldErrorf(sfRevisionField, "%s %q is not a Salesforce field name (for example SystemModstamp)", field)
	}
	out["revision_field"] = field
	return newURLToken(), out, nil
}

// NewSecret returns a new URL token.
func (salesforce) NewSecret(map[string]string) (string, error) { return newURLToken(), nil }

// HasSecrets is true: the secrets are the URL tokens.
func (salesforce) HasSecrets() bool { return true }

// PullAPI: a connected app's client id and secret, for the OAuth 2.0 client
// credentials flow (domain/pull).
func (salesforce) PullAPI() pull.API { return pull.ClientCredentialsAPI }

// Credentials: the URL token.
func (salesforce) Credentials() (headers, query []string) { return nil, []string{"token"} }

func (salesforce) Authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (string, error) {
	token := r.URL.Query().Get("token")
	if token == "" {
		return domain.SignatureMissing, fmt.Errorf("the token query parameter is required: the outbound message's Endpoint URL must end in ?token=<the provider's token>, " +
			"the URL shown when the provider was created or its token rotated")
	}
	if !tokenMatches(token, p.Secrets) {
		return domain.SignatureInvalid, fmt.Errorf("the token query parameter does not match an active token of this provider")
	}
	if raw := strings.TrimSpace(p.Config["allowed_networks"]); raw != "" {
		nets, err := netlist.Parse(raw)
		if err != nil {
			return domain.SignatureInvalid, fmt.Errorf("the provider's allowed_networks is invalid; no delivery is accepted until it is fixed: %w", err)
		}
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return domain.SignatureInvalid, fmt.Errorf("sender address %q could not be read; this provider only accepts listed networks", r.RemoteAddr)
		}
		addr = addr.Unmap()
		allowed := false
		for _, n := range nets {
			if n.Contains(addr) {
				allowed = true
				break
			}
		}
		if !allowed {
			return domain.SignatureInvalid, fmt.Errorf("sender address %s is outside the provider's allowed networks", addr)
		}
	}
	env, err := decodeSalesforce(body)
	if err != nil {
		// Not an outbound message at all: nothing to check the sender
		// against. parse fails on the same bytes and answers 400.
		return domain.SignatureUnchecked, nil
	}
	if env.orgID == "" {
		return domain.SignatureMissing, fmt.Errorf("the notifications envelope has no OrganizationId")
	}
	if !salesforceOrgMatches(p.Config["org_id"], env.orgID) {
		return domain.SignatureInvalid, fmt.Errorf("OrganizationId %.40q is not the organization configured for this provider", env.orgID)
	}
	return domain.SignatureValid, nil
}

// salesforceOrgMatches compares the envelope's OrganizationId with the
// configured one in constant time. A 15-character configured id (the
// case-sensitive form) matches the first 15 characters of an 18-character one.
func salesforceOrgMatches(configured, got string) bool {
	configured = strings.TrimSpace(configured)
	if configured == "" {
		return false
	}
	if len(configured) == 15 && len(got) == 18 {
		got = got[:15]
	}
	return subtle.ConstantTimeCompare([]byte(configured), []byte(got)) == 1
}

func (salesforce) Parse(r *http.Request, body []byte, p domain.ProviderEndpoint) ([]domain.Event, error) {
	env, err := decodeSalesforce(body)
	if err != nil {
		return nil, err
	}
	if !salesforceOrgMatches(p.Config["org_id"], env.orgID) {
		return nil, fmt.Errorf("OrganizationId is not the organization configured for this provider")
	}
	revField := p.Config["revision_field"]
	if revField == "" {
		revField = sfDefaultRevKey
	}
	events := make([]domain.Event, len(env.notes))
	for i, n := range env.notes {
		events[i] = n.event(env.orgID, revField)
	}
	return events, nil
}

func (salesforce) Respond(w http.ResponseWriter, deliveryID string, results []domain.Result) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, salesforceAck)
}

// RespondQueued answers the same Ack: Salesforce resends an outbound
// message until it reads one, whatever the HTTP status.
func (s salesforce) RespondQueued(w http.ResponseWriter, deliveryID, _ string) int {
	s.Respond(w, deliveryID, nil)
	return http.StatusOK
}

// sfEnvelope is what decodeSalesforce reads from a notifications call.
type sfEnvelope struct {
	orgID string
	notes []sfNote
}

type sfNote struct {
	raw []byte // the Notification element as received
	sfNotification
}

type sfNotification struct {
	ID      *string    `xml:"http://soap.sforce.com/2005/09/outbound Id"`
	SObject *sfSObject `xml:"http://soap.sforce.com/2005/09/outbound sObject"`
}

type sfSObject struct {
	Attrs  []xml.Attr `xml:",any,attr"`
	Fields []sfField  `xml:",any"`
}

type sfField struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Text     string     `xml:",chardata"`
	Children []struct {
		XMLName xml.Name
	} `xml:",any"`
}

func xsiAttr(attrs []xml.Attr, local string) (string, bool) {
	for _, a := range attrs {
		if a.Name.Local == local && (a.Name.Space == "http://www.w3.org/2001/XMLSchema-instance" || a.Name.Space == "xsi") {
			return a.Value, true
		}
	}
	return "", false
}

func (f sfField) isNil() bool {
	v, _ := xsiAttr(f.Attrs, "nil")
	v = strings.TrimSpace(v)
	return v == "true" || v == "1"
}

var errNotSalesforce = errors.New(`body is not a Salesforce outbound message: expected a SOAP Envelope whose Body holds <notifications xmlns="` + sfOutboundNS + `">`)

// decodeSalesforce reads a SOAP notifications envelope, keeping the raw
// bytes of every Notification element.
func decodeSalesforce(body []byte) (*sfEnvelope, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("body is not valid UTF-8")
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	syntax := func(err error) error {
		if err == io.EOF {
			return fmt.Errorf("body is not a complete XML document")
		}
		return fmt.Errorf("body is not well-formed XML: %w", err)
	}
	// next returns the next start element at this level, or nil at the
	// parent's end.
	next := func() (*xml.StartElement, error) {
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, syntax(err)
			}
			switch t := tok.(type) {
			case xml.StartElement:
				return &t, nil
			case xml.EndElement:
				return nil, nil
			case xml.CharData:
				if len(bytes.TrimSpace(t)) != 0 {
					return nil, errNotSalesforce
				}
			}
		}
	}
	root, err := next()
	if err != nil {
		return nil, err
	}
	if root == nil || root.Name.Space != soapEnvNS || root.Name.Local != "Envelope" {
		return nil, errNotSalesforce
	}
	// Envelope: optional Header, then Body.
	var bodyEl *xml.StartElement
	for bodyEl == nil {
		el, err := next()
		if err != nil {
			return nil, err
		}
		if el == nil {
			return nil, errNotSalesforce
		}
		if el.Name.Space == soapEnvNS && el.Name.Local == "Body" {
			bodyEl = el
		} else if err := d.Skip(); err != nil {
			return nil, syntax(err)
		}
	}
	el, err := next()
	if err != nil {
		return nil, err
	}
	if el == nil || el.Name.Space != sfOutboundNS || el.Name.Local != "notifications" {
		return nil, errNotSalesforce
	}
	env := &sfEnvelope{}
	orgSeen := false
	for {
		start := d.InputOffset()
		el, err := next()
		if err != nil {
			return nil, err
		}
		if el == nil {
			break
		}
		switch {
		case el.Name.Space == sfOutboundNS && el.Name.Local == "OrganizationId":
			if orgSeen {
				return nil, fmt.Errorf("the notifications envelope has more than one OrganizationId")
			}
			orgSeen = true
			if err := d.DecodeElement(&env.orgID, el); err != nil {
				return nil, syntax(err)
			}
			env.orgID = strings.TrimSpace(env.orgID)
		case el.Name.Space == sfOutboundNS && el.Name.Local == "Notification":
			if len(env.notes) == sfMaxNotes {
				return nil, fmt.Errorf("the notifications envelope has more than %d Notification elements", sfMaxNotes)
			}
			var n sfNote
			if err := d.DecodeElement(&n.sfNotification, el); err != nil {
				return nil, syntax(err)
			}
			raw := bytes.TrimSpace(body[start:d.InputOffset()])
			n.raw = append([]byte(nil), raw...)
			env.notes = append(env.notes, n)
		default:
			if err := d.Skip(); err != nil {
				return nil, syntax(err)
			}
		}
	}
	// The rest of the document must close properly: Body, then Envelope.
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, syntax(err)
		}
		if _, ok := tok.(xml.StartElement); ok {
			if err := d.Skip(); err != nil {
				return nil, syntax(err)
			}
		}
	}
	if len(env.notes) == 0 {
		return nil, fmt.Errorf("the notifications envelope has no Notification element")
	}
	return env, nil
}

// event turns one Notification into an event. A notification that names no
// record, or whose revision field cannot be read, is rejected with a reason.
func (n sfNote) event(orgID, revField string) domain.Event {
	e := domain.Event{Scope: domain.ScopeName{Action: "outbound"}, Payload: n.raw}
	id := ""
	if n.ID != nil {
		id = strings.TrimSpace(*n.ID)
	}
	e.EventID = orgID + ":" + id
	so := n.SObject
	if so == nil {
		e.RejectReason = "Notification has no sObject"
		return e
	}
	typ, _ := xsiAttr(so.Attrs, "type")
	typ = strings.TrimSpace(typ)
	if _, local, ok := strings.Cut(typ, ":"); ok {
		typ = local
	}
	if !sfObjectTypePattern.MatchString(typ) {
		e.RejectReason = fmt.Sprintf("sObject has no usable xsi:type (got %.60q; expected for example sf:Contact)", typ)
		return e
	}
	e.Scope.ObjectType = strings.ToLower(typ)
	if id == "" {
		e.RejectReason = "Notification has no Id"
		return e
	}
	if len(e.EventID) > 255 {
		e.RejectReason = "Notification Id is longer than 255 characters"
		return e
	}

	snapshot := make(map[string]any, len(so.Fields))
	var objectID, revision *sfField
	for i := range so.Fields {
		f := &so.Fields[i]
		name := f.XMLName.Local
		if _, dup := snapshot[name]; dup {
			e.RejectReason = fmt.Sprintf("sObject field %.80s appears more than once", name)
			return e
		}
		if len(f.Children) > 0 {
			e.RejectReason = fmt.Sprintf("sObject field %.80s has nested elements; outbound message fields are flat values", name)
			return e
		}
		if f.isNil() {
			snapshot[name] = nil
		} else {
			snapshot[name] = f.Text
		}
		switch {
		case name == "Id":
			objectID = f
		case name == revField || (revision == nil && strings.EqualFold(name, revField)):
			revision = f
		}
	}
	if objectID == nil || objectID.isNil() || strings.TrimSpace(objectID.Text) == "" {
		e.RejectReason = "sObject has no Id (a record deleted before delivery arrives without data)"
		return e
	}
	e.ObjectID = strings.TrimSpace(objectID.Text)
	if len(e.ObjectID) > 255 {
		e.RejectReason = "sObject Id is longer than 255 characters"
		return e
	}
	snap, err := json.Marshal(snapshot)
	if err != nil {
		e.RejectReason = "sObject fields cannot be stored as JSON"
		return e
	}
	e.Snapshot = snap
	if revision == nil || revision.isNil() || strings.TrimSpace(revision.Text) == "" {
		return e // unversioned
	}
	stamp := strings.TrimSpace(revision.Text)
	e.Timestamp = stamp
	micros, t, err := SalesforceRevision(stamp)
	switch {
	case errors.Is(err, errSFBefore1970):
		e.RejectReason = fmt.Sprintf("%s %s is before 1970 and cannot be used as a revision", revField, stamp)
		return e
	case err != nil:
		e.RejectReason = fmt.Sprintf("%s %.60q is not a date-time like 2026-11-29T10:00:00.000Z", revField, stamp)
		return e
	}
	e.Revision, e.RevisionTime = &micros, t
	return e
}

var errSFBefore1970 = errors.New("a revision before 1970")

// SalesforceRevision reads the text of a revision field as an outbound
// message carries it (a dateTime such as 2026-11-29T10:00:00.000Z): the
// revision is its microseconds since 1970, at the instant it names. The
// backfill's Salesforce source computes its revisions here too, so a record
// pulled from the API and the same record received by webhook agree. It
// fails on text that is no date-time and on an instant before 1970.
func SalesforceRevision(stamp string) (int64, time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return 0, time.Time{}, err
	}
	micros := t.UnixMicro()
	if micros < 0 {
		return 0, time.Time{}, errSFBefore1970
	}
	return micros, t, nil
}

func (salesforce) Form() Form {
	return Form{Legend: "For Salesforce", Title: "Salesforce", About: "Outbound messages of a Salesforce flow or workflow rule, checked by the organization id and a token in the URL.",
		Fields: []Field{sfOrgField, sfNetworksField, sfRevisionField}}
}

func (salesforce) Settings(config map[string]string) []Setting {
	nets := config["allowed_networks"]
	if nets == "" {
		nets = "any"
	}
	rev := config["revision_field"]
	if rev == "" {
		rev = sfDefaultRevKey
	}
	return []Setting{
		{Label: sfOrgField.Label, Value: config["org_id"]},
		{Label: sfNetworksField.Label, Value: nets},
		{Label: sfRevisionField.Label, Value: rev},
	}
}

func (salesforce) SecretPage(endpoint, secret string, config map[string]string) SecretPage {
	body := salesforceSampleBody(config["org_id"], "04l000000000000AAA", sampleTime)
	v := SecretPage{EndpointURL: endpoint + "?token=" + url.QueryEscape(secret), Secret: secret, SecretName: "token", CopyURL: true,
		Intro: "Salesforce outbound messages carry no signature: Tidemark authenticates them by this token, sent back as the token query parameter of the URL, " +
			"then by the Organization Id every message carries and, when set, the sender's network. " +
			"Paste the whole URL below, token included, into the outbound message's Endpoint URL.",
		CurlHint: "Send a one-notification outbound message from a shell (needs curl); the answer is the SOAP acknowledgement:"}
	v.CurlExample = strings.Join([]string{
		"url=" + ShellQuote(v.EndpointURL),
		"body=" + ShellQuote(string(body)),
		`curl -sS -X POST "$url" -H 'Content-Type: text/xml; charset=utf-8' -H 'SOAPAction: ""' -d "$body"`,
	}, "\n")
	return v
}

func (salesforce) ProviderPage(map[string]string) ProviderPage {
	return ProviderPage{EndpointSuffix: "?token=…",
		URLNote: "Salesforce sends the token back as the token query parameter: the Endpoint URL of the outbound message ends in ?token= and the token, " +
			"which was shown once when it was issued. Tidemark cannot show it again; rotate to get a new one.",
		IssuedNotice: "Salesforce deliveries now need this URL, token included: Tidemark refuses outbound messages without it with 401. " +
			"Paste it into the Endpoint URL of every outbound message that sends to this provider.",
		TestHint: "Sends a one-notification outbound message for Contact tidemark-test with the newest token, the configured Organization Id and a SystemModstamp of now; with allowed networks set, it comes from the first one."}
}

// TestDelivery is a one-notification outbound message of the configured
// organization carrying the token, sent from the first allowed network when
// there are any. Its answer is the bare acknowledgement, so the outcome is
// read from the log.
func (salesforce) TestDelivery(_, secret string, config map[string]string, now time.Time) (Delivery, error) {
	noteID := "console-test-" + uuid.NewString()
	org := config["org_id"]
	d := Delivery{Query: "token=" + url.QueryEscape(secret), Body: salesforceSampleBody(org, noteID, now), ContentType: "text/xml; charset=utf-8",
		Headers: map[string]string{"SOAPAction": `""`}, EventID: org + ":" + noteID,
		Ack: "<Ack>true</Ack>", AckNote: "Ack true"}
	if nets, err := netlist.Parse(config["allowed_networks"]); err == nil && len(nets) > 0 {
		d.RemoteAddr = net.JoinHostPort(nets[0].Addr().String(), "443")
	}
	return d, nil
}

// salesforceSampleBody is an outbound message with one notification (id
// noteID) for the sample Contact of organization org, modified at.
func salesforceSampleBody(org, noteID string, at time.Time) []byte {
	var b bytes.Buffer
	esc := func(s string) string {
		var e bytes.Buffer
		xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">`)
	b.WriteString(`<soapenv:Body><notifications xmlns="http://soap.sforce.com/2005/09/outbound">`)
	b.WriteString(`<OrganizationId>` + esc(org) + `</OrganizationId>`)
	b.WriteString(`<Notification><Id>` + esc(noteID) + `</Id>`)
	b.WriteString(`<sObject xsi:type="sf:Contact" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">`)
	b.WriteString(`<sf:Id>` + sampleContact + `</sf:Id>`)
	b.WriteString(`<sf:LastName>Tidemark test</sf:LastName>`)
	b.WriteString(`<sf:SystemModstamp>` + at.UTC().Format("2006-01-02T15:04:05.000Z") + `</sf:SystemModstamp>`)
	b.WriteString(`</sObject></Notification></notifications></soapenv:Body></soapenv:Envelope>`)
	return b.Bytes()
}
