// Package supervisor runs the long-lived services of a node (serve or
// worker): it starts them in order, reports their health, and stops them in
// reverse order within a bounded time, so that what a node accepted is
// written before what it needs to write it goes away.
//
// A node lists its services from the bottom up, each after what it uses:
// the database pools first, then what the rest reads (the span exporters,
// the endpoint listener, the queue), background work, the group
// committers, the workers that write through the store (replays, the
// destination sender, alerts, backfill), and what accepts work (the HTTP
// server, the queue consumer) last. On shutdown the last is stopped first:
// nothing new is accepted, the workers stop, the accepted work drains,
// the background stops, then the pools close.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Service is one long-lived part of a node.
type Service interface {
	// Name names the service in logs and health reports.
	Name() string
	// Run works until ctx is cancelled and then returns nil; an error
	// returned before that stops the whole node.
	Run(ctx context.Context) error
}

// Stopper is a Service that is asked to stop rather than cancelled: Stop
// returns once the service has finished its work, or when ctx (the
// shutdown's deadline) ends; Run's context is cancelled afterwards.
type Stopper interface {
	Stop(ctx context.Context) error
}

// State is where a service is in its life.
type State string

// The states of a service.
const (
	Starting State = "starting"
	Running  State = "running"
	Stopping State = "stopping"
	Stopped  State = "stopped"
	Failed   State = "failed"
)

// Status is a service's health.
type Status struct {
	Name  string
	State State
	Since time.Time
	Err   error // why it failed
}

// Supervisor runs services. Its zero value is not usable: use New.
type Supervisor struct {
	log      *slog.Logger
	shutdown time.Duration

	mu     sync.Mutex
	status []Status
}

// New returns a Supervisor that logs to log and gives a shutdown at most
// shutdown to stop every service.
func New(log *slog.Logger, shutdown time.Duration) *Supervisor {
	return &Supervisor{log: log, shutdown: shutdown}
}

// Health reports every service's state, in start order.
func (s *Supervisor) Health() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Status(nil), s.status...)
}

func (s *Supervisor) set(i int, st State, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[i] = Status{Name: s.status[i].Name, State: st, Since: time.Now(), Err: err}
}

// running is one started service.
type running struct {
	svc    Service
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's result, set before done closes
}

// Run starts services in order and runs them until ctx ends or one of them
// fails, then stops them in reverse order, each waited for, all within the
// shutdown time. It returns the first failure, or nil when ctx ended it. A
// service that does not stop in time is reported and left behind.
func (s *Supervisor) Run(ctx context.Context, services ...Service) error {
	s.mu.Lock()
	s.status = make([]Status, len(services))
	for i, svc := range services {
		s.status[i] = Status{Name: svc.Name(), State: Starting, Since: time.Now()}
	}
	s.mu.Unlock()

	failed := make(chan int, len(services))
	started := make([]*running, 0, len(services))
	for i, svc := range services {
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		r := &running{svc: svc, cancel: cancel, done: make(chan struct{})}
		started = append(started, r)
		s.set(i, Running, nil)
		go func() {
			defer close(r.done)
			r.err = svc.Run(rctx)
			if r.err != nil && rctx.Err() == nil {
				failed <- i
			}
		}()
	}

	var first error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down")
	case i := <-failed:
		first = fmt.Errorf("%s: %w", services[i].Name(), started[i].err)
		s.set(i, Failed, started[i].err)
		s.log.Error("service failed; shutting down", "service", services[i].Name(), "err", started[i].err)
	}

	deadline, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdown)
	defer cancel()
	for i := len(started) - 1; i >= 0; i-- {
		if err := s.stop(deadline, i, started[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// stop stops one service and waits for it until deadline ends.
func (s *Supervisor) stop(deadline context.Context, i int, r *running) error {
	name, began := r.svc.Name(), time.Now()
	select {
	case <-r.done: // it failed, or returned on its own
		if r.err == nil {
			s.set(i, Stopped, nil)
		} else if s.Health()[i].State != Failed {
			s.set(i, Failed, r.err)
			s.log.Error("service failed", "service", name, "err", r.err)
		}
		return nil
	default:
	}
	s.set(i, Stopping, nil)
	var stopErr error
	if st, ok := r.svc.(Stopper); ok {
		stopErr = st.Stop(deadline)
	}
	r.cancel()
	select {
	case <-r.done:
	case <-deadline.Done():
		err := fmt.Errorf("%s did not stop within the shutdown time", name)
		s.set(i, Failed, err)
		s.log.Error("service did not stop in time", "service", name)
		return err
	}
	err := errors.Join(stopErr, r.err)
	if err != nil {
		s.set(i, Failed, err)
		s.log.Error("service stopped with an error", "service", name, "err", err)
		return fmt.Errorf("stop %s: %w", name, err)
	}
	s.set(i, Stopped, nil)
	s.log.Info("stopped", "service", name, "took", time.Since(began).Round(time.Millisecond))
	return nil
}
