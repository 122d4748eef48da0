package webtest

import (
	"context"

	"github.com/tidemark/tidemark/domain"
)

// replayAPI posts POST deliveries/{id}/replay with token.
func (e *Env) ReplayAPI(token, id string) (int, map[string]any) {
	e.T.Helper()
	return e.Post("/api/v1/tenants/acme/deliveries/"+id+"/replay", nil, map[string]string{"Authorization": "Bearer " + token})
}

// replayOutcome replays a delivery of one event and returns its outcome.
func (e *Env) ReplayOutcome(token, id string) string {
	e.T.Helper()
	status, body := e.ReplayAPI(token, id)
	return Outcome(e.T, status, body)
}

// setScope enables or disables acme/crm's contact.snapshot scope.
func (e *Env) SetScope(enabled bool) {
	e.T.Helper()
	ctx := CliContext()
	p, err := e.Store.Endpoint(ctx, "acme", "crm")
	if err != nil {
		e.T.Fatal(err)
	}
	sc := domain.DefaultScope(domain.ScopeName{ObjectType: "contact", Action: "snapshot"})
	sc.Enabled = enabled
	if err := e.Store.SaveProviderScope(ctx, p.TenantID, p.ID, sc); err != nil {
		e.T.Fatal(err)
	}
}

// auditEntries lists acme's audit entries of replays as "actor action
// target: summary".
func (e *Env) AuditEntries() []string {
	e.T.Helper()
	rows, err := e.Store.Pool().Query(context.Background(),
		`SELECT actor || ' ' || action || ' ' || target || ': ' || summary FROM audit_log
		 WHERE tenant_id = (SELECT id FROM tenants WHERE slug = 'acme')
		   AND action IN ('delivery_replay', 'replay_start', 'replay_cancel', 'replay_done') ORDER BY id`)
	if err != nil {
		e.T.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.T.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
