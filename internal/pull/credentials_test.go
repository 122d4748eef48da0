package pull_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/egress"
	pullapi "github.com/tidemark/tidemark/internal/pull"
)

// TestCheckCredentials: the kind's API decides what is taken; a loopback or private
// login or base URL is refused, saying so, unless private addresses are
// allowed; a public one passes.
func TestCheckCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const token = "pat-na1-0000"
	sf := pull.Credentials{ClientID: "3MVG9abc", ClientSecret: "s3cr3t", LoginURL: "https://203.0.113.5"}
	if got, err := pullapi.CheckCredentials(ctx, "salesforce", sf); err != nil || got.APIVersion != pull.DefaultAPIVersion {
		t.Fatalf("salesforce at a public address: %+v, %v", got, err)
	}
	if _, err := pullapi.CheckCredentials(ctx, "hubspot", pull.Credentials{Token: token}); err != nil {
		t.Fatalf("hubspot with a token: %v", err)
	}
	if _, err := pullapi.CheckCredentials(ctx, "standard", pull.Credentials{Token: token}); domain.ErrorCode(err) != domain.EINVALID ||
		domain.ErrorMessage(err) != "provider kind standard has no API to pull from" {
		t.Fatalf("standard: %v", err)
	}
	if _, err := pullapi.CheckCredentials(ctx, "hubspot", sf); err == nil || !strings.Contains(err.Error(), "take no client id") {
		t.Fatalf("hubspot with client credentials: %v", err)
	}

	loopback := pull.Credentials{Token: token, BaseURL: "http://127.0.0.1:8080", AllowPrivate: false}
	_, err := pullapi.CheckCredentials(ctx, "hubspot", loopback)
	if err == nil || !strings.Contains(domain.ErrorMessage(err), "must use https") {
		t.Fatalf("http base URL without allow-private: %v", err)
	}
	loopback.BaseURL = "https://127.0.0.1:8443"
	_, err = pullapi.CheckCredentials(ctx, "hubspot", loopback)
	if domain.ErrorCode(err) != domain.EINVALID || !errors.Is(err, egress.ErrPrivate) ||
		!strings.HasPrefix(domain.ErrorMessage(err), "API base URL: host 127.0.0.1 is") {
		t.Fatalf("loopback base URL: %v, want a private refusal naming the field", err)
	}
	private := sf
	private.LoginURL = "https://10.1.2.3"
	if _, err := pullapi.CheckCredentials(ctx, "salesforce", private); !errors.Is(err, egress.ErrPrivate) ||
		!strings.HasPrefix(domain.ErrorMessage(err), "login URL: host 10.1.2.3 is") {
		t.Fatalf("private login URL: %v", err)
	}
	loopback.AllowPrivate, private.AllowPrivate = true, true
	if _, err := pullapi.CheckCredentials(ctx, "hubspot", loopback); err != nil {
		t.Fatalf("loopback base URL with allow-private: %v", err)
	}
	private.LoginURL = "http://127.0.0.1:9999"
	if _, err := pullapi.CheckCredentials(ctx, "salesforce", private); err != nil {
		t.Fatalf("http loopback login URL with allow-private: %v", err)
	}
}

// TestCheckHidesInternalDNS: a login URL whose name resolves to an internal
// address, or does not resolve, is refused naming the host only; the
// address and the resolver's error are egress.Detail's, for the server log
// (review 4, L3).
func TestCheckHidesInternalDNS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pull.Credentials{ClientID: "3MVG9abc", ClientSecret: "s3cr3t", LoginURL: "https://localhost:8443"}
	_, err := pullapi.CheckCredentials(ctx, "salesforce", c)
	if msg := domain.ErrorMessage(err); !errors.Is(err, egress.ErrPrivate) ||
		msg != "login URL: host localhost resolves to a private or internal address: "+egress.ErrPrivate.Error() {
		t.Fatalf("localhost: %q (%v)", msg, err)
	}
	if d := egress.Detail(err); !strings.Contains(d, "127.0.0.1") && !strings.Contains(d, "::1") {
		t.Errorf("detail %q does not name the address", d)
	}
	c.LoginURL = "https://nothing.invalid"
	_, err = pullapi.CheckCredentials(ctx, "salesforce", c)
	if msg := domain.ErrorMessage(err); domain.ErrorCode(err) != domain.EINVALID || msg != "login URL: host nothing.invalid does not resolve" {
		t.Fatalf("unresolved: %q (%v)", msg, err)
	}
	if d := egress.Detail(err); !strings.Contains(d, "lookup nothing.invalid") {
		t.Errorf("detail %q is not the resolver's error", d)
	}
}
