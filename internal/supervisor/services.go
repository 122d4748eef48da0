package supervisor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Func is a Service that runs run.
func Func(name string, run func(ctx context.Context) error) Service {
	return funcService{name: name, run: run}
}

type funcService struct {
	name string
	run  func(ctx context.Context) error
}

func (f funcService) Name() string                  { return f.name }
func (f funcService) Run(ctx context.Context) error { return f.run(ctx) }

// Every is a Service that calls fn after first, and then again after the
// delay fn returns each time, until ctx ends. fn reports its own errors:
// a periodic job that fails tries again later rather than stopping a node.
func Every(name string, first time.Duration, fn func(ctx context.Context) (next time.Duration)) Service {
	return Func(name, func(ctx context.Context) error {
		wait := first
		for {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-timer.C:
			}
			// A select with both ready picks either: a node that stopped
			// while the timer fired must not start another round.
			if ctx.Err() != nil {
				return nil
			}
			wait = fn(ctx)
		}
	})
}

// OnStop is a Service that does nothing until the node stops it, and then
// calls stop with the shutdown's deadline: draining what others accepted,
// closing what they used.
func OnStop(name string, stop func(ctx context.Context) error) Service {
	return onStop{name: name, stop: stop}
}

type onStop struct {
	name string
	stop func(ctx context.Context) error
}

func (o onStop) Name() string { return o.name }

func (o onStop) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (o onStop) Stop(ctx context.Context) error { return o.stop(ctx) }

// HTTP is a Service that serves srv on ln. Stopping it stops accepting
// connections and waits for the requests in progress (http.Server's
// Shutdown), within the shutdown's deadline.
func HTTP(name string, srv *http.Server, ln net.Listener) Service {
	return httpService{name: name, srv: srv, ln: ln}
}

type httpService struct {
	name string
	srv  *http.Server
	ln   net.Listener
}

func (h httpService) Name() string { return h.name }

func (h httpService) Run(ctx context.Context) error {
	if err := h.srv.Serve(h.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (h httpService) Stop(ctx context.Context) error {
	if err := h.srv.Shutdown(ctx); err != nil {
		// Requests still running at the deadline are cut off.
		h.srv.Close()
		return err
	}
	return nil
}
