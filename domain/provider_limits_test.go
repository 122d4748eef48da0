package domain_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

func TestParseByteSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"1MiB", 1 << 20, true},
		{"5MiB", 5 << 20, true},
		{"5 mib", 5 << 20, true},
		{"512KiB", 512 << 10, true},
		{"1GiB", 1 << 30, true},
		{"100B", 100, true},
		{"0", 0, true},   // the range is the caller's to check
		{"-1", -1, true}, // likewise
		{"5MB", 0, false},
		{"1.5MiB", 0, false},
		{"MiB", 0, false},
		{"", 0, false},
		{"99999999999GiB", 0, false},
	} {
		got, err := domain.ParseByteSize(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if !tc.ok && domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("ParseByteSize(%q) = %d, %v; want EINVALID", tc.in, got, err)
		}
	}
}

func TestFormatByteSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{1 << 20: "1 MiB", 5 << 20: "5 MiB", 64 << 20: "64 MiB", 3072: "3 KiB",
		1536: "1536 bytes", 0: "0 bytes", 1 << 30: "1 GiB"} {
		if got := domain.FormatByteSize(n); got != want {
			t.Errorf("FormatByteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestProviderLimitsValidate(t *testing.T) {
	t.Parallel()
	size := func(n int64) *int64 { return &n }
	skew := func(d time.Duration) *time.Duration { return &d }
	for _, tc := range []struct {
		name string
		l    domain.ProviderLimits
		ok   bool
	}{
		{"nothing", domain.ProviderLimits{}, true},
		{"1 byte", domain.ProviderLimits{MaxBody: size(1)}, true},
		{"64 MiB", domain.ProviderLimits{MaxBody: size(domain.MaxBodyCeiling)}, true},
		{"0: the kind's default", domain.ProviderLimits{MaxBody: size(0)}, true},
		{"over 64 MiB", domain.ProviderLimits{MaxBody: size(domain.MaxBodyCeiling + 1)}, false},
		{"negative body", domain.ProviderLimits{MaxBody: size(-1)}, false},
		{"no future at all", domain.ProviderLimits{MaxFutureSkew: skew(0)}, true},
		{"24h", domain.ProviderLimits{MaxFutureSkew: skew(24 * time.Hour)}, true},
		{"over 24h", domain.ProviderLimits{MaxFutureSkew: skew(24*time.Hour + time.Second)}, false},
		{"negative skew", domain.ProviderLimits{MaxFutureSkew: skew(-time.Second)}, false},
		{"fraction of a second", domain.ProviderLimits{MaxFutureSkew: skew(1500 * time.Millisecond)}, false},
	} {
		err := tc.l.Validate()
		if tc.ok != (err == nil) || (err != nil && domain.ErrorCode(err) != domain.EINVALID) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
