package pull

import (
	"context"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// API is what credentials a provider kind's API takes. Each kind declares
// its own (internal/provider), so these rules never name a kind.
type API int

const (
	// NoAPI: the kind has no API to pull from.
	NoAPI API = iota
	// TokenAPI: a bearer token, such as a HubSpot private app's access
	// token, at the provider's API address or BaseURL.
	TokenAPI
	// ClientCredentialsAPI: the OAuth 2.0 client credentials flow of a
	// client id and secret at LoginURL, such as a Salesforce connected app.
	ClientCredentialsAPI
)

// DefaultAPIVersion is the REST API version a ClientCredentialsAPI is
// called on when the credentials name none.
const DefaultAPIVersion = "v62.0"

// maxCredentialLength bounds every field: real tokens, ids and URLs are far
// shorter, and a pasted file is a mistake.
const maxCredentialLength = 4096

var apiVersionPattern = regexp.MustCompile(`^v[1-9][0-9]{0,2}\.[0-9]$`)

// Check validates c as the API credentials of a provider of kind, whose
// API is api, and returns it completed: APIVersion and BudgetShare
// defaulted, text fields trimmed. Every refusal is EINVALID and names what
// is wrong, never a secret's value. Whether a URL's address may be reached
// is not checked here (internal/pull does, after DNS).
func (c Credentials) Check(kind string, api API) (Credentials, error) {
	c.ClientID, c.LoginURL = strings.TrimSpace(c.ClientID), strings.TrimSpace(c.LoginURL)
	c.APIVersion, c.BaseURL = strings.TrimSpace(c.APIVersion), strings.TrimSpace(c.BaseURL)
	switch api {
	case TokenAPI:
		if err := c.checkToken(kind); err != nil {
			return c, err
		}
	case ClientCredentialsAPI:
		if err := c.checkClientCredentials(kind); err != nil {
			return c, err
		}
	default:
		return c, invalid("provider kind %s has no API to pull from", kind)
	}
	if c.BudgetShare == 0 {
		c.BudgetShare = DefaultBudgetShare
	}
	if !(c.BudgetShare > 0 && c.BudgetShare <= 1) {
		return c, invalid("the share of the API budget must be above 0%% and at most 100%%, got %s", formatShare(c.BudgetShare))
	}
	return c, nil
}

func (c *Credentials) checkToken(kind string) error {
	if c.ClientID != "" || c.ClientSecret != "" || c.LoginURL != "" || c.APIVersion != "" {
		return invalid("%s API credentials are an access token: they take no client id, client secret, login URL or API version", kind)
	}
	if err := checkSecret(SecretToken, c.Token); err != nil {
		return err
	}
	if c.BaseURL != "" {
		return checkURL("API base URL", c.BaseURL, c.AllowPrivate)
	}
	return nil
}

func (c *Credentials) checkClientCredentials(kind string) error {
	if c.Token != "" || c.BaseURL != "" {
		return invalid("%s API credentials are a client id and secret: they take no access token or API base URL "+
			"(the instance's address comes with each access token)", kind)
	}
	if c.ClientID == "" {
		return invalid("a client id is required: the connected app's consumer key")
	}
	if len(c.ClientID) > maxCredentialLength || strings.ContainsFunc(c.ClientID, isSpaceOrControl) {
		return invalid("the client id must be one word of at most %d characters", maxCredentialLength)
	}
	if err := checkSecret(SecretClient, c.ClientSecret); err != nil {
		return err
	}
	if c.LoginURL == "" {
		return invalid("a login URL is required, such as https://MYDOMAIN.my.salesforce.com")
	}
	if err := checkURL("login URL", c.LoginURL, c.AllowPrivate); err != nil {
		return err
	}
	if c.APIVersion == "" {
		c.APIVersion = DefaultAPIVersion
	}
	if !apiVersionPattern.MatchString(c.APIVersion) {
		return invalid("the API version must look like %s, got %q", DefaultAPIVersion, c.APIVersion)
	}
	return nil
}

// checkSecret refuses an empty secret, or one that cannot be a single
// token; the message never repeats it.
func checkSecret(what, secret string) error {
	if secret == "" {
		return invalid("the %s is required", what)
	}
	if len(secret) > maxCredentialLength || strings.ContainsFunc(secret, isSpaceOrControl) {
		return invalid("the %s must be one line without spaces, of at most %d characters", what, maxCredentialLength)
	}
	return nil
}

// checkURL requires an absolute https URL with a host, without a user or
// password; http only when private addresses are allowed (a test server,
// a sandbox on the operator's network).
func checkURL(what, raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || len(raw) > maxCredentialLength {
		return invalid("the %s must be an absolute https URL, such as https://example.com", what)
	}
	if u.User != nil {
		return invalid("the %s must not contain a user name or password", what)
	}
	if u.Scheme == "http" && !allowPrivate {
		return invalid("the %s must use https (http only with private addresses allowed, for a test server)", what)
	}
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

func invalid(format string, args ...any) error {
	return domain.Errorf(domain.EINVALID, format, args...)
}

// formatShare is a budget share as a percentage, such as "50%".
func formatShare(share float64) string {
	return strconv.FormatFloat(share*100, 'f', -1, 64) + "%"
}

// Summary describes c without its secrets, for the audit log and the
// command line: which secret it holds and every other field set.
func (c Credentials) Summary() string {
	var parts []string
	if c.Token != "" {
		parts = append(parts, SecretToken)
	}
	if c.ClientID != "" {
		parts = append(parts, "client id "+c.ClientID)
	}
	if c.ClientSecret != "" {
		parts = append(parts, SecretClient)
	}
	if c.LoginURL != "" {
		parts = append(parts, "login URL "+c.LoginURL)
	}
	if c.APIVersion != "" {
		parts = append(parts, "API version "+c.APIVersion)
	}
	if c.BaseURL != "" {
		parts = append(parts, "API base URL "+c.BaseURL)
	}
	if c.AllowPrivate {
		parts = append(parts, "private addresses allowed")
	}
	share := c.BudgetShare
	if share == 0 {
		share = DefaultBudgetShare
	}
	return strings.Join(append(parts, "at most "+formatShare(share)+" of the API budget"), "; ")
}

// The secrets credentials hold, as Summary and Info name them.
const (
	SecretToken  = "access token"
	SecretClient = "client secret"
)

// Info is what may be shown of a provider's API credentials: everything
// but their secrets.
type Info struct {
	// Secret names the secret they hold: SecretToken or SecretClient.
	Secret                                  string
	ClientID, LoginURL, APIVersion, BaseURL string
	AllowPrivate                            bool
	BudgetShare                             float64
	SetAt                                   time.Time
	// SetBy is who set them, as the audit log names the actor.
	SetBy string
}

// BudgetPercent is the budget share as a percentage, such as "50%".
func (i Info) BudgetPercent() string { return formatShare(i.BudgetShare) }

// Audit actions of API credentials; their summaries hold no secret.
const (
	AuditCredentialsSet   = "api_credentials_set"
	AuditCredentialsClear = "api_credentials_clear"
)

// CredentialStore keeps providers' API credentials, their secrets sealed
// at rest. Every method takes the tenant: another tenant's provider id is
// not found.
type CredentialStore interface {
	// SetAPICredentials stores c, checked by Check, as the provider's API
	// credentials, replacing any, and audits it. ENOTFOUND when the tenant
	// has no such provider; EINVALID when c holds neither or both of Token
	// and ClientSecret.
	SetAPICredentials(ctx context.Context, tenantID, providerID int64, c Credentials) error
	// ClearAPICredentials deletes the provider's API credentials and audits
	// it. ENOTFOUND when the tenant has no such provider or it has none.
	ClearAPICredentials(ctx context.Context, tenantID, providerID int64) error
	// APICredentials returns the provider's credentials with their secret
	// decrypted, for the backfill alone; false when it has none. A secret
	// that cannot be decrypted is an error, logged by its ids only.
	APICredentials(ctx context.Context, tenantID, providerID int64) (Credentials, bool, error)
	// APICredentialsInfo returns what may be shown of them; false when the
	// provider has none.
	APICredentialsInfo(ctx context.Context, tenantID, providerID int64) (Info, bool, error)
}

// ShareFromPercent reads p, a share of the API budget in percent (such as
// 50), as a BudgetShare; it refuses what is not above 0 and at most 100.
func ShareFromPercent(p float64) (float64, error) {
	if !(p > 0 && p <= 100) {
		return 0, invalid("the share of the API budget must be above 0%% and at most 100%%, got %s%%",
			strconv.FormatFloat(p, 'f', -1, 64))
	}
	return p / 100, nil
}
