package domain_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

func TestNormalizeLead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   domain.Lead
		want domain.Lead // ignored when code is set
		code string
	}{
		{"company address gives the account domain",
			domain.Lead{Email: "  Ann@Acme.COM ", Name: " Ann ", Campaign: " webinar-11 ", Source: " form "},
			domain.Lead{Email: "ann@acme.com", Name: "Ann", Domain: "acme.com", Campaign: "webinar-11", Source: "form"}, ""},
		{"free-mail address gives no account",
			domain.Lead{Email: "ann@gmail.com", Campaign: "w"},
			domain.Lead{Email: "ann@gmail.com", Campaign: "w"}, ""},
		{"free-mail check ignores case",
			domain.Lead{Email: "Ann@GMail.com", Campaign: "w"},
			domain.Lead{Email: "ann@gmail.com", Campaign: "w"}, ""},
		{"explicit domain wins and is normalised",
			domain.Lead{Email: "ann@gmail.com", Domain: " Acme.com ", Company: " Acme ", Campaign: "w"},
			domain.Lead{Email: "ann@gmail.com", Domain: "acme.com", Company: "Acme", Campaign: "w"}, ""},
		{"no at sign", domain.Lead{Email: "ann.acme.com", Campaign: "w"}, domain.Lead{}, domain.EINVALID},
		{"no dot in the domain", domain.Lead{Email: "ann@localhost", Campaign: "w"}, domain.Lead{}, domain.EINVALID},
		{"two at signs", domain.Lead{Email: "ann@x@acme.com", Campaign: "w"}, domain.Lead{}, domain.EINVALID},
		{"space inside", domain.Lead{Email: "ann smith@acme.com", Campaign: "w"}, domain.Lead{}, domain.EINVALID},
		{"empty email", domain.Lead{Campaign: "w"}, domain.Lead{}, domain.EINVALID},
		{"too long", domain.Lead{Email: strings.Repeat("a", 250) + "@x.io", Campaign: "w"}, domain.Lead{}, domain.EINVALID},
		{"no campaign", domain.Lead{Email: "ann@acme.com"}, domain.Lead{}, domain.EINVALID},
		{"blank campaign", domain.Lead{Email: "ann@acme.com", Campaign: "  "}, domain.Lead{}, domain.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.NormalizeLead(tc.in)
			wantCode(t, err, tc.code)
			if tc.code == "" && got != tc.want {
				t.Errorf("NormalizeLead = %+v, want %+v", got, tc.want)
			}
			if tc.code != "" && !strings.HasPrefix(domain.ErrorMessage(err), "data.") {
				t.Errorf("reject reason %q does not name the field", err)
			}
		})
	}
}

func TestNormalizeEmail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"ann@acme.com", "ann@acme.com"},
		{"  Ann@ACME.com\n", "ann@acme.com"},
		{"", ""},
		{"not an email", "not an email"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			if got := domain.NormalizeEmail(tc.in); got != tc.want {
				t.Errorf("NormalizeEmail(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	// The people search finds what signups stored.
	l, err := domain.NormalizeLead(domain.Lead{Email: " Ann@Acme.com", Campaign: "w"})
	if err != nil || domain.NormalizeEmail(" ANN@acme.COM ") != l.Email {
		t.Errorf("NormalizeEmail and NormalizeLead disagree: %q, %v", l.Email, err)
	}
}

func TestLeadLockKeys(t *testing.T) {
	t.Parallel()
	withAccount := domain.Lead{Email: "ann@acme.com", Domain: "acme.com"}
	for _, tc := range []struct {
		name   string
		tenant int64
		lead   domain.Lead
		n      int
	}{
		{"person and account", 1, withAccount, 2},
		{"person only", 1, domain.Lead{Email: "ann@gmail.com"}, 1},
		{"another tenant", 2, withAccount, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keys := domain.LeadLockKeys(tc.tenant, tc.lead)
			if len(keys) != tc.n {
				t.Fatalf("%d keys, want %d", len(keys), tc.n)
			}
			if !slices.IsSorted(keys) {
				t.Errorf("keys %v are not sorted: two signups could deadlock", keys)
			}
			if !slices.Equal(keys, domain.LeadLockKeys(tc.tenant, tc.lead)) {
				t.Error("keys are not deterministic")
			}
		})
	}
	if slices.Equal(domain.LeadLockKeys(1, withAccount), domain.LeadLockKeys(2, withAccount)) {
		t.Error("two tenants share lock keys")
	}
	// A person's key and an account's key never meet, even for one string.
	person := domain.LeadLockKeys(1, domain.Lead{Email: "acme.com"})[0]
	if slices.Contains(domain.LeadLockKeys(1, domain.Lead{Email: "ann@b.io", Domain: "acme.com"}), person) {
		t.Error("the person acme.com and the account acme.com share a lock key")
	}
}
