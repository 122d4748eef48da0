package supervisor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// journal records what services did, in order.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, s)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

// recorded is a service that journals its start and its end.
func recorded(j *journal, name string, started chan<- string) Service {
	return Func(name, func(ctx context.Context) error {
		j.add("start " + name)
		started <- name
		<-ctx.Done()
		j.add("end " + name)
		return nil
	})
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitStarted waits until n services said they started.
func waitStarted(t *testing.T, started <-chan string, n int) {
	t.Helper()
	for range n {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("services did not start")
		}
	}
}

func TestStopsInReverseOrderAfterTheNodeIsCancelled(t *testing.T) {
	t.Parallel()
	j := &journal{}
	started := make(chan string, 3)
	ctx, cancel := context.WithCancel(context.Background())
	s := New(quiet(), 5*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, recorded(j, "pools", started),
			OnStop("drain", func(context.Context) error { j.add("drain"); return nil }),
			recorded(j, "background", started), recorded(j, "http", started))
	}()
	waitStarted(t, started, 3)
	for _, st := range s.Health() {
		if st.State != Running {
			t.Errorf("%s is %s before shutdown, want running", st.Name, st.State)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after a cancelled node", err)
	}
	got := j.list()
	wantEnd := []string{"end http", "end background", "drain", "end pools"}
	if !slices.Equal(got[3:], wantEnd) {
		t.Errorf("stopped as %q, want %q", got[3:], wantEnd)
	}
	for _, st := range s.Health() {
		if st.State != Stopped {
			t.Errorf("%s is %s after shutdown, want stopped", st.Name, st.State)
		}
	}
}

func TestAFailedServiceStopsTheOthersAndIsReturned(t *testing.T) {
	t.Parallel()
	j := &journal{}
	started := make(chan string, 2)
	boom := errors.New("listener gone")
	fail := make(chan struct{})
	s := New(quiet(), 5*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(context.Background(), recorded(j, "first", started),
			Func("failing", func(ctx context.Context) error { <-fail; return boom }),
			recorded(j, "last", started))
	}()
	waitStarted(t, started, 2)
	close(fail)
	err := <-done
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "failing") {
		t.Fatalf("Run = %v, want the failure named by its service", err)
	}
	if got := j.list()[2:]; !slices.Equal(got, []string{"end last", "end first"}) {
		t.Errorf("stopped as %q, want the others in reverse order", got)
	}
	if st := s.Health()[1]; st.State != Failed || !errors.Is(st.Err, boom) {
		t.Errorf("health of the failed service = %+v", st)
	}
}

func TestAServiceThatDoesNotStopIsLeftAtTheDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	s := New(quiet(), 200*time.Millisecond)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, Func("stuck", func(context.Context) error { <-release; return nil }))
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "stuck did not stop") {
			t.Fatalf("Run = %v, want the stuck service named", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run waited past its shutdown time")
	}
}

func TestEveryRunsUntilStopped(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	ctx, cancel := context.WithCancel(context.Background())
	s := New(quiet(), time.Second)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, Every("tick", 0, func(context.Context) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			if calls++; calls == 3 {
				cancel()
			}
			return time.Millisecond
		}))
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 {
		t.Errorf("called %d times, want 3 (until the node stopped)", calls)
	}
}

// TestHTTPFinishesRequestsInProgress: stopping the HTTP service answers the
// request in progress, then refuses new connections, before the services
// under it stop.
func TestHTTPFinishesRequestsInProgress(t *testing.T) {
	t.Parallel()
	j := &journal{}
	inHandler, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inHandler)
		<-release
		j.add("answered")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := New(quiet(), 5*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, OnStop("pools", func(context.Context) error { j.add("pools closed"); return nil }),
			HTTP("http", srv, ln))
	}()
	answer := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err == nil {
			resp.Body.Close()
		}
		answer <- err
	}()
	<-inHandler
	cancel()
	time.Sleep(50 * time.Millisecond) // Shutdown has closed the listener
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("a new connection was accepted during shutdown")
	}
	close(release)
	if err := <-answer; err != nil {
		t.Errorf("the request in progress was not answered: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := j.list(); !slices.Equal(got, []string{"answered", "pools closed"}) {
		t.Errorf("journal %q, want the answer before the pools close", got)
	}
}
