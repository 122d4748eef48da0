package netlist_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/netlist"
)

func TestParse(t *testing.T) {
	t.Parallel()
	got, err := netlist.Parse(" 10.0.0.0/8 ,,192.0.2.7, 10.1.2.3/16 ")
	if err != nil || len(got) != 3 || got[1].String() != "192.0.2.7/32" || got[2].String() != "10.1.0.0/16" {
		t.Fatalf("%v, %v", got, err)
	}
	if got, err := netlist.Parse(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v, %v", got, err)
	}
	if _, err := netlist.Parse("10.0.0.0/8,10.0.0.0/33"); err == nil || !strings.Contains(err.Error(), `"10.0.0.0/33" is not a CIDR network`) {
		t.Fatalf("bad CIDR: %v", err)
	}
}
