// Package provider holds everything Tidemark knows about each provider kind:
// its wire format (authentication, parsing, the acknowledgement it waits
// for), what a new provider of the kind needs, and what the console shows
// and sends for it. Each kind lives in one file and registers itself, so the
// webhook handler, the console and the command line never name a kind.
//
// A new kind is one file here (a type implementing Kind, registered from the
// file's init), its fixtures under testdata/<kind> and its tests (table
// tests of its authentication and parse errors, a fuzz test of Parse).
// Storage keeps whatever kind name the registry accepted.
package provider

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// Kind is one provider kind. Implementations are stateless values
// registered with Register from the kind's own file.
type Kind interface {
	// Name is the kind's name as stored with a provider, such as "standard".
	Name() string

	// Setup checks what a new provider of the kind needs and completes it:
	// the secret (generated when empty; "" for a kind that signs nothing)
	// and a copy of config with the kind's defaults. Refusals are EINVALID;
	// those about one field are *FieldError.
	Setup(secret string, config map[string]string) (string, map[string]string, error)
	// NewSecret returns a fresh secret for the rotation of a provider with
	// config, or an error for a kind without secrets.
	NewSecret(config map[string]string) (string, error)
	// HasSecrets reports whether the kind authenticates with secrets, so
	// that rotating and retiring apply.
	HasSecrets() bool

	// Authenticate checks a delivery over its raw bytes, before anything is
	// parsed, in constant time with respect to the secrets, and returns the
	// signature verdict stored with the delivery (domain.Signature*).
	Authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (verdict string, err error)
	// Parse splits an authenticated body into events, in delivery order. An
	// error means the body is not in the kind's format at all (400).
	Parse(r *http.Request, body []byte, p domain.ProviderEndpoint) ([]domain.Event, error)
	// Respond acknowledges a committed delivery the way the provider
	// expects, so that it does not retry.
	Respond(w http.ResponseWriter, deliveryID string, results []domain.Result)

	// Form is the kind's section of the console's connect form.
	Form() Form
	// Settings lists a provider's kind-specific settings for display.
	Settings(config map[string]string) []Setting
	// SecretPage is what the page showing a new provider or a rotated secret
	// says: how to paste the endpoint and the secret into the provider, and
	// a shell snippet sending one sample delivery. endpoint is the
	// provider's webhook URL.
	SecretPage(endpoint, secret string, config map[string]string) SecretPage
	// ProviderPage is what the provider's console page says about the kind.
	ProviderPage(config map[string]string) ProviderPage
	// TestDelivery is a sample delivery to endpoint, authenticated with
	// secret (the newest one; "" for a kind without secrets) as the provider
	// would at now.
	TestDelivery(endpoint, secret string, config map[string]string, now time.Time) (Delivery, error)
}

// Form is a kind's section of the connect form. A kind without settings
// has no fields and no section.
type Form struct {
	Legend string // the section's title, such as "For Shippo"
	Fields []Field
	// Title and About name the kind and say what sends its webhooks and
	// how they are authenticated, on the form's kind choice.
	Title, About string
}

// Field describes one input of the connect form.
type Field struct {
	Name   string // the form field's name, such as "org_id"
	Config string // the config key it fills; "" for the secret field
	Secret bool   // it carries the provider's secret, never shown back
	Label  string // what refusals and settings call it, such as "Allowed networks"
	// Caption is the text next to the input when it says more than Label,
	// such as "Allowed networks (optional)".
	Caption string
	Flag    string // the command-line flag setting the same value, such as "--org-id"
	Usage   string // the command-line flag's help, naming the kind
	Input   string // "text", "password", "select" or "checkbox"
	// Required means the console refuses an empty value instead of
	// generating one: the provider issues the secret. RequiredHint says
	// where the operator finds it.
	Required     bool
	RequiredHint string
	Options      []Option // for a select; the first is the default
	Placeholder  string
	MinLength    int
	MaxLength    int
	Hint         string // help shown with the input
	HintID       string // the id the input's aria-describedby names
}

// Option is one choice of a select field.
type Option struct {
	Value string
	Label string
}

// Setting is one kind-specific setting shown on a provider's pages.
type Setting struct {
	Label string
	Value string
}

// SecretPage is what the new-secret page shows for a kind.
type SecretPage struct {
	EndpointURL string // the URL to paste into the provider, token included
	Secret      string // the secret to copy; "" when it is not shown
	SecretName  string // what the secret is called, such as "signing secret"
	// SecretStored says that a secret the operator pasted was stored, for a
	// kind whose secret is issued by the provider and not shown back.
	SecretStored string
	URLNote      string // what to know about the endpoint URL
	Intro        string // how the provider authenticates its deliveries
	CurlHint     string // what the snippet sends and needs
	CurlExample  string // a shell snippet sending one sample delivery with curl
	SendExample  string // the same with `tidemark send`; empty when the kind has none
	// CopyURL says the secret is only ever used inside EndpointURL, so the
	// URL is what the operator copies: the command line prints it last.
	CopyURL bool
}

// ProviderPage is what a provider's console page says about its kind.
type ProviderPage struct {
	EndpointSuffix string // appended to the endpoint URL shown, such as "?token=…"
	URLNote        string // what to know about the endpoint URL
	AuthNote       string // how a kind without secrets authenticates
	TestHint       string // what the test event sends
	// IssuedNotice is what the page says over a secret issued to an
	// existing provider (when the kind came to need one) until an operator
	// confirms the provider was updated; empty for a generic text.
	IssuedNotice string
	// NoRotation says how a kind without secrets authenticates instead,
	// when an operator asks to rotate.
	NoRotation string
}

// Delivery is a sample delivery built by TestDelivery.
type Delivery struct {
	Query       string // the URL's query, without "?"
	ContentType string // application/json when empty
	RemoteAddr  string // the sender's address, for kinds that check it
	Headers     map[string]string
	Body        []byte
	// EventID, when set, names the delivery's event in the delivery log:
	// the kind's answer carries no outcome, so the console reads it there.
	EventID string
	// Ack is what an answer acknowledging the delivery contains, and AckNote
	// what the console says when it finds it.
	Ack, AckNote string
}

// credentialed is implemented by kinds whose deliveries carry credentials
// in headers or query parameters, so that the delivery log redacts them.
type credentialed interface {
	// Credentials names the headers and query parameters that carry a
	// signature or a token (header names in any case).
	Credentials() (headers, query []string)
}

// CredentialHeader reports whether the header called name of a delivery to
// a provider of kind carries a credential: one the kind declares, or one
// the generic rule (domain.CredentialName) recognises.
func CredentialHeader(kind, name string) bool {
	return credential(kind, name, func(c credentialed) []string { h, _ := c.Credentials(); return h })
}

// CredentialQuery is CredentialHeader for a query parameter.
func CredentialQuery(kind, name string) bool {
	return credential(kind, name, func(c credentialed) []string { _, q := c.Credentials(); return q })
}

func credential(kind, name string, names func(credentialed) []string) bool {
	if domain.CredentialName(name) {
		return true
	}
	c, ok := registry[kind].(credentialed)
	if !ok {
		return false
	}
	for _, n := range names(c) {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// DefaultMaxBody is the largest delivery body read for a provider whose
// kind declares no default of its own and which has no limit set.
const DefaultMaxBody = 1 << 20

// bodyLimited is implemented by kinds whose deliveries are routinely larger
// than DefaultMaxBody (such as Salesforce's envelopes of 100 notifications).
type bodyLimited interface {
	// DefaultMaxBody is the kind's default body limit, in bytes.
	DefaultMaxBody() int64
}

// KindMaxBody is the body limit of a provider of the named kind without a
// limit of its own.
func KindMaxBody(kind string) int64 {
	k, _ := Lookup(kind)
	if bl, ok := k.(bodyLimited); ok {
		return bl.DefaultMaxBody()
	}
	return DefaultMaxBody
}

// MaxBody is the largest delivery body read for p: its own limit, else its
// kind's default.
func MaxBody(p domain.Provider) int64 {
	if p.MaxBody > 0 {
		return p.MaxBody
	}
	return KindMaxBody(p.Kind)
}

// registry holds the registered kinds by name.
var registry = map[string]Kind{}

// Register makes k available under k.Name(). It is called from the init
// function of the kind's file and panics on a duplicate name.
func Register(k Kind) {
	if _, dup := registry[k.Name()]; dup {
		panic("provider: kind " + k.Name() + " registered twice")
	}
	registry[k.Name()] = k
}

// Lookup returns the kind named name.
func Lookup(name string) (Kind, bool) {
	k, ok := registry[name]
	return k, ok
}

// defaultKind is listed first and preselected in the connect form.
const defaultKind = "standard"

// Names lists the registered kinds: the default first, then by name.
func Names() []string {
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == defaultKind) != (names[j] == defaultKind) {
			return names[i] == defaultKind
		}
		return names[i] < names[j]
	})
	return names
}

// Get returns the kind of that name, or an EINVALID error listing the kinds.
func Get(name string) (Kind, error) {
	if k, ok := Lookup(name); ok {
		return k, nil
	}
	return nil, domain.Errorf(domain.EINVALID, "provider kind %q is not one of %s", name, strings.Join(Names(), ", "))
}

// Setup checks and completes a new provider of the named kind (see
// Kind.Setup). An unknown kind is EINVALID.
func Setup(kind, secret string, config map[string]string) (string, map[string]string, error) {
	k, err := Get(kind)
	if err != nil {
		return "", nil, err
	}
	if config == nil {
		config = map[string]string{}
	}
	return k.Setup(secret, config)
}

// NewSecret returns a fresh secret for a rotation of p.
func NewSecret(p domain.Provider) (string, error) {
	k, err := Get(p.Kind)
	if err != nil {
		return "", err
	}
	return k.NewSecret(p.Config)
}

// FieldError is a setup refusal about one field. Message names the field by
// its command-line flag, FormMessage by its connect-form label; both say
// the same otherwise. It is EINVALID for domain.ErrorCode.
type FieldError struct {
	Field       string // "secret" or the config key concerned
	Flag        string // the command-line flag, such as "--org-id"
	Label       string // the connect form's label, such as "Organization Id"
	Message     string // for the command line
	FormMessage string // for the console
}

func (e *FieldError) Error() string { return e.Message }

// Unwrap makes the refusal an EINVALID *domain.Error carrying Message.
func (e *FieldError) Unwrap() error { return &domain.Error{Code: domain.EINVALID, Message: e.Message} }

// fieldErrorf returns a refusal about f: format's first verb is the field's
// name, given as f.Flag for the command line and f.Label for the console,
// so neither text is rewritten from the other.
func fieldErrorf(f Field, format string, args ...any) *FieldError {
	field := f.Config
	if f.Secret {
		field = "secret"
	}
	return &FieldError{Field: field, Flag: f.Flag, Label: f.Label,
		Message:     fmt.Sprintf(format, append([]any{f.Flag}, args...)...),
		FormMessage: fmt.Sprintf(format, append([]any{f.Label}, args...)...)}
}

// publicBaseKey is the request context key of the public base URL the
// provider called this server at, for kinds whose signature covers the URL.
type publicBaseKey struct{}

// WithPublicBase returns ctx carrying the public base URL (such as
// "https://hooks.example.com") a delivery was sent to, which differs from
// the request's Host behind a proxy.
func WithPublicBase(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, publicBaseKey{}, base)
}

// clone returns a copy of config that setup can complete without changing
// the caller's map.
func clone(config map[string]string) map[string]string {
	out := make(map[string]string, len(config)+1)
	for k, v := range config {
		out[k] = v
	}
	return out
}
