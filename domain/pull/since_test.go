package pull_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
)

func TestParseSince(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"72h", 72 * time.Hour}, {" 90m ", 90 * time.Minute}, {"72", 72 * time.Hour}, {"2160h", pull.MaxSince}, {"2160", pull.MaxSince},
	} {
		if got, err := pull.ParseSince(c.in); err != nil || got != c.want {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "0", "-1h", "2161h", "2161", "91d", "soon", "1.5", "99999999999999999999"} {
		if _, err := pull.ParseSince(in); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("ParseSince(%q): %v, want EINVALID", in, err)
		}
	}
}
