package main

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestProviderLimitsCommands: provider create --max-body and provider
// update set a provider's limits, refuse values out of bounds with a
// message saying what is allowed, and update prints the limits after.
func TestProviderLimitsCommands(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t),
		"TIDEMARK_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	for _, size := range []string{"0", "-5", "65MiB", "5MB", "lots"} {
		_, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard", "--max-body", size)
		if err == nil || !strings.Contains(err.Error(), "at most 64 MiB") {
			t.Errorf("create --max-body %s: %v, want a refusal naming the bounds", size, err)
		}
	}
	if _, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard", "--max-body", "2MiB"); err != nil {
		t.Fatalf("create --max-body 2MiB: %v", err)
	}
	update := func(args ...string) (string, error) {
		out, _, err := tidemark(t, env, "", append([]string{"provider", "update", "--tenant", "acme", "--provider", "crm"}, args...)...)
		return out, err
	}
	out, err := update("--max-future-skew", "90s")
	if err != nil || !strings.Contains(out, "max body: 2 MiB (2097152 bytes)") || !strings.Contains(out, "max future skew: 1m30s") {
		t.Fatalf("update --max-future-skew 90s: %v\n%s", err, out)
	}
	out, err = update("--max-body", "1048576")
	if err != nil || !strings.Contains(out, "max body: 1 MiB (1048576 bytes)\n") || !strings.Contains(out, "1m30s") {
		t.Fatalf("update --max-body 1048576: %v\n%s", err, out)
	}
	out, err = update("--max-body", "default", "--max-future-skew", "5m")
	if err != nil || !strings.Contains(out, "1 MiB (1048576 bytes, the kind's default)") || !strings.Contains(out, "5m0s") {
		t.Fatalf("update --max-body default: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "nothing to change"},
		{[]string{"--max-body", "100MiB"}, "at most 64 MiB"},
		{[]string{"--max-future-skew", "-1s"}, "from 0s to 24h0m0s"},
		{[]string{"--max-future-skew", "1500ms"}, "whole seconds"},
	} {
		if _, err := update(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("update %v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, _, err := tidemark(t, env, "", "provider", "update", "--tenant", "acme", "--provider", "nothing", "--max-body", "1MiB"); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("update of an unknown provider: %v", err)
	}
}
