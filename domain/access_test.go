package domain_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

func TestLoginAddressKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ address, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"not an address", "not an address"},
		{strings.Repeat("x", 100), strings.Repeat("x", 64)},
	} {
		t.Run(c.address, func(t *testing.T) {
			t.Parallel()
			if got := domain.LoginAddressKey(c.address); got != c.want {
				t.Fatalf("LoginAddressKey(%q) = %q, want %q", c.address, got, c.want)
			}
		})
	}
}

func TestCheckSignIn(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", domain.MaxEmailLength-len("@example.com")) + "@example.com"
	for _, c := range []struct {
		name, email, password string
		ok                    bool
	}{
		{"ordinary", "ops@example.com", "correct horse battery", true},
		{"longest", long, strings.Repeat("p", domain.MaxPasswordBytes), true},
		{"email too long", "a" + long, "correct horse battery", false},
		{"password too long", "ops@example.com", strings.Repeat("p", domain.MaxPasswordBytes+1), false},
		{"no email", "  ", "correct horse battery", false},
		{"no password", "ops@example.com", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := domain.CheckSignIn(c.email, c.password)
			if (err == nil) != c.ok || (err != nil && domain.ErrorCode(err) != domain.EINVALID) {
				t.Fatalf("CheckSignIn: %v, want ok=%v", err, c.ok)
			}
		})
	}
}
