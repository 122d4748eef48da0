// Package salesforce reads from a Salesforce org's REST API the records
// that its outbound messages should have carried, as the events the
// outbound message parser (internal/provider) would have made of them: the
// same object type, action, snapshot and revision, so a record pulled after
// its webhook arrived is redundant, and one the webhooks missed is applied.
//
// It signs in with the OAuth 2.0 client credentials flow, queries each
// object type over SystemModstamp, reads deletions from the getDeleted
// resource, retries what Salesforce asks to be retried, and stops before
// the org's daily API budget passes the share the credentials allow.
package salesforce

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/egress"
)

// DefaultAPIVersion is the REST API version used when the credentials name
// none.
const DefaultAPIVersion = "v62.0"

// requestTimeout bounds each HTTP request, a page of up to 2,000 records
// included.
const requestTimeout = 60 * time.Second

var (
	versionPattern    = regexp.MustCompile(`^v[0-9]{2,3}\.[0-9]$`)
	objectTypePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,99}$`)
	// fieldPattern is the outbound message parser's: a field's API name,
	// never a relationship path (Account.Name), which outbound messages
	// cannot carry.
	fieldPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,79}$`)
)

// standardTypes are the API names of the standard objects, so that pulling
// them needs no describe call.
var standardTypes = map[string]string{
	"account": "Account", "contact": "Contact", "lead": "Lead", "opportunity": "Opportunity", "case": "Case",
}

// Source pulls one Salesforce org's records. It implements pull.Source and
// is safe for concurrent use.
type Source struct {
	loginURL               string // scheme://host, no path
	clientID, clientSecret string
	version                string
	share                  float64
	allowPrivate           bool
	client                 *http.Client
	log                    *slog.Logger
	fields                 map[string][]string // by object type: the fields outbound messages carry
	revisionField          string

	// retries is how many times a refused request is tried again; wait is
	// the first pause when Salesforce names none, doubled each time up to
	// maxWait, which also bounds a Retry-After.
	retries       int
	wait, maxWait time.Duration

	mu       sync.Mutex
	token    string   // the cached access token; "" until fetched
	instance *url.URL // the cached instance URL
	apiNames map[string]string
	used     int // the org's API usage, from the last Sforce-Limit-Info
	limit    int
}

// An Option sets what the outbound messages of the provider carry.
type Option func(*Source) error

// WithFields names the fields the outbound messages of objectType (lower
// case, as the events name it: contact) carry, besides Id and the revision
// field, so that a pulled snapshot holds exactly those fields. Without it a
// pulled snapshot holds Id and the revision field alone, and a record whose
// webhook carried more is a revision conflict.
func WithFields(objectType string, names ...string) Option {
	return func(s *Source) error {
		if !objectTypePattern.MatchString(objectType) {
			return fmt.Errorf("salesforce: object type %q is not a lower-case sObject name such as contact", objectType)
		}
		for _, n := range names {
			if !fieldPattern.MatchString(n) {
				return fmt.Errorf("salesforce: %q is not a field's API name such as LastName", n)
			}
		}
		s.fields[objectType] = append(s.fields[objectType], names...)
		return nil
	}
}

// WithRevisionField is the provider's revision field (its revision_field
// setting; SystemModstamp when not given). Pulled events take their
// revision from it, as the outbound message parser does.
func WithRevisionField(name string) Option {
	return func(s *Source) error {
		if !fieldPattern.MatchString(name) {
			return fmt.Errorf("salesforce: revision field %q is not a field's API name such as SystemModstamp", name)
		}
		s.revisionField = name
		return nil
	}
}

// New returns a source for the connected app of c: ClientID, ClientSecret
// and LoginURL are required, LoginURL https (http only with AllowPrivate,
// for tests), APIVersion like v62.0 (DefaultAPIVersion when empty). It
// calls out to nothing: the first Pull signs in.
func New(c pull.Credentials, log *slog.Logger, opts ...Option) (*Source, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &Source{clientID: strings.TrimSpace(c.ClientID), clientSecret: c.ClientSecret, version: c.APIVersion,
		share: c.BudgetShare, allowPrivate: c.AllowPrivate, log: log, fields: map[string][]string{},
		revisionField: "SystemModstamp", retries: 5, wait: time.Second, maxWait: 2 * time.Minute,
		apiNames: map[string]string{}}
	if s.clientID == "" || s.clientSecret == "" {
		return nil, errors.New("salesforce: a client id and a client secret (the connected app's consumer key and secret) are required")
	}
	login, err := checkBaseURL(c.LoginURL, c.AllowPrivate)
	if err != nil {
		return nil, fmt.Errorf("salesforce: login URL: %w", err)
	}
	s.loginURL = login.String()
	if s.version == "" {
		s.version = DefaultAPIVersion
	}
	if !versionPattern.MatchString(s.version) {
		return nil, fmt.Errorf("salesforce: API version %q is not like %s", s.version, DefaultAPIVersion)
	}
	switch {
	case s.share == 0:
		s.share = pull.DefaultBudgetShare
	case s.share < 0 || s.share > 1:
		return nil, fmt.Errorf("salesforce: budget share %g is not between 0 and 1", s.share)
	}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	s.client = egress.NewClient(c.AllowPrivate, requestTimeout)
	return s, nil
}

// checkBaseURL accepts a site's address (https://MYDOMAIN.my.salesforce.com)
// and returns it without path; http only when allowPrivate. Errors never
// repeat the URL.
func checkBaseURL(raw string, allowPrivate bool) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("required, such as https://MYDOMAIN.my.salesforce.com")
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return nil, errors.New("not a URL")
	case u.Scheme != "https" && !(allowPrivate && u.Scheme == "http"):
		return nil, errors.New("must be https")
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "":
		return nil, errors.New("must be a site's address alone, such as https://MYDOMAIN.my.salesforce.com")
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}
