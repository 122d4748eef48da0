package shape

import (
	"sync"
	"testing"

	"cel.dev/cel-go/common/types"
)

// TestCompileConcurrently: API requests and senders check expressions at
// once. cel-go's checker fills an Env's catalog the first time it reports
// an undeclared reference while another compile of the same Env may read
// it (v0.33.3, seen under -race in CI), so each round starts on a fresh
// Env, as the first compiles after a start do.
func TestCompileConcurrently(t *testing.T) {
	t.Parallel()
	anything := func(*types.Type) bool { return true }
	for range 20 {
		env := newEnv(VarChange, VarAlert)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				expr := `change.changed.exists(f, f == "x") && change.changed.all(f, size(f) > 1)`
				if i%2 == 0 {
					expr = `chnage.changed.exists(f, f == "x")` // an undeclared reference
				}
				_, _, err := compile(env, FieldFilter, expr, "a bool", anything)
				if (err != nil) != (i%2 == 0) {
					t.Errorf("%s: %v", expr, err)
				}
			})
		}
		wg.Wait()
	}
}
