package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/replay"
)

// The operator's steps of the demo history: what the demo admin does
// between deliveries, through the store's services as the console would.

// demoBillingScope is the scope of billing's that the demo switches off for
// a while.
var demoBillingScope = domain.ScopeName{ObjectType: "deal", Action: "snapshot"}

// DestinationURL is where the demo destination would send: a name
// that resolves nowhere (.invalid), and the destination is paused, so
// nothing is ever sent.
const DestinationURL = "https://warehouse.example.invalid/tidemark/changes"

// act adds an operator's step to the plan.
func (p *demoPlan) act(what string, action func(ctx context.Context, s *demoSeeder) error) {
	p.steps = append(p.steps, &demoStep{id: what, action: action})
}

// asOperator is ctx acting as the demo admin.
func (s *demoSeeder) asOperator(ctx context.Context) context.Context {
	return domain.WithActor(ctx, domain.Actor{Kind: domain.ActorOperator, Name: Email})
}

// endpoint is the demo provider of that name.
func (s *demoSeeder) endpoint(ctx context.Context, name string) (domain.ProviderEndpoint, error) {
	p, ok := s.endpoints[name]
	if !ok {
		var err error
		if p, err = s.store.Endpoint(ctx, Tenant, name); err != nil {
			return p, err
		}
		s.endpoints[name] = p
	}
	return p, nil
}

// demoScope switches billing's demoBillingScope on or off.
func demoScope(enabled bool) func(ctx context.Context, s *demoSeeder) error {
	return func(ctx context.Context, s *demoSeeder) error {
		p, err := s.endpoint(ctx, "billing")
		if err != nil {
			return err
		}
		sc := domain.DefaultScope(demoBillingScope)
		sc.Enabled = enabled
		return s.store.SaveProviderScope(ctx, p.TenantID, p.ID, sc)
	}
}

// demoDestination creates the demo's destination, for the crm provider's
// changes, and pauses it before anything could be sent.
func demoDestination(ctx context.Context, s *demoSeeder) error {
	p, err := s.endpoint(ctx, Provider)
	if err != nil {
		return err
	}
	d, _, err := s.store.CreateDestination(ctx, p.TenantID, stream.NewDestination{URL: DestinationURL, Provider: Provider})
	if err != nil {
		return err
	}
	s.destination = d.ID
	return s.store.PauseDestination(ctx, p.TenantID, d.ID)
}

// replayRejected starts a bulk replay of billing's deliveries with a
// rejected event, as the demo admin, and runs it to its end with a replay
// worker of its own, the replays received at the seeder's clock (now).
func (s *demoSeeder) replayRejected(ctx context.Context, scope domain.ScopeName) (domain.ReplayJob, error) {
	p, err := s.endpoint(ctx, "billing")
	if err != nil {
		return domain.ReplayJob{}, err
	}
	job, err := s.store.StartReplayJob(ctx, p.TenantID, domain.DeliveryFilter{Provider: "billing", Outcome: domain.Rejected}, true)
	if err != nil {
		return job, err
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		replay.Worker{Replayer: s.replayer, Deliveries: s.store, Poll: 10 * time.Millisecond}.Run(wctx)
	}()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(time.Minute)
	for {
		if job, err = s.store.ReplayJob(ctx, p.TenantID, job.ID); err != nil {
			return job, err
		}
		switch {
		case job.Status == domain.ReplayDone:
			return job, nil
		case !job.Active():
			return job, fmt.Errorf("the replay of %s's rejected deliveries ended %s: %s", scope, job.Status, job.Error)
		case time.Now().After(deadline):
			return job, fmt.Errorf("the replay of %s's rejected deliveries did not finish within a minute", scope)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
