package ingest

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
)

// listenEndpointsSQL subscribes to the notifications that migration 00015's
// triggers send, with a tenant id, when an endpoint of that tenant changes.
const listenEndpointsSQL = `LISTEN tidemark_endpoints`

// endpointsListenerApp names the listener's connection in pg_stat_activity.
const endpointsListenerApp = "tidemark endpoints listener"

// How soon the listener reconnects: at first after listenRetryMin, then
// twice as late each time, up to listenRetryMax.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// listenKeepAlive notices a peer gone silent (a network partition rather
// than a closed connection) within about 20 s, instead of Go's 2.5 minutes,
// so the cache turns off; entries expire after endpointTTL regardless.
var listenKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 5 * time.Second, Count: 3}

// ErrAlreadyListening is returned by a second ListenForChanges on a writer.
var ErrAlreadyListening = errors.New("this store's endpoint cache already has a listener")

// ListenForChanges turns on the cache of Endpoint and keeps it current until
// ctx ends; then it returns nil, and Endpoint queries the database again on
// every call. It holds a connection of its own, outside the pool, that
// LISTENs for the changes of any node: each drops the changed tenant's
// entries. While that connection is down the cache is empty and bypassed,
// since notifications may be missed, and the connection is retried with
// backoff. A writer runs one listener: a second call returns
// ErrAlreadyListening.
func (w *Writer) ListenForChanges(ctx context.Context) error {
	c := &w.endpoints
	if !c.listening.CompareAndSwap(false, true) {
		return ErrAlreadyListening
	}
	defer c.listening.Store(false)
	defer c.reset(false, 0)
	wait, down := c.firstRetry(), false
	for {
		err := w.listen(ctx, func() {
			wait = c.firstRetry()
			if down {
				w.log.Info("endpoint cache is back: its listener reconnected")
			}
			down = false
		})
		c.reset(false, 0)
		if ctx.Err() != nil {
			return nil
		}
		if !down {
			w.log.Warn("endpoint cache off until its listener reconnects", "err", err)
			down = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, listenRetryMax)
	}
}

// EndpointCacheLive reports whether Endpoint is serving from its cache:
// ListenForChanges runs and its connection is up.
func (w *Writer) EndpointCacheLive() bool {
	live, _, _ := w.endpoints.state()
	return live
}

// listen connects, LISTENs, turns the cache on (calling up) and handles
// notifications until the connection fails or ctx ends.
func (w *Writer) listen(ctx context.Context, up func()) error {
	cfg := w.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = endpointsListenerApp
	cfg.DialFunc = (&net.Dialer{KeepAliveConfig: listenKeepAlive}).DialContext
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, listenEndpointsSQL); err != nil {
		return err
	}
	// From here on every committed change is notified, so lookups that
	// start now may be kept.
	w.endpoints.reset(true, conn.PgConn().PID())
	up()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		w.endpoints.invalidate(n.Payload)
	}
}

func (c *endpointCache) firstRetry() time.Duration {
	if c.retryMin > 0 {
		return c.retryMin
	}
	return listenRetryMin
}
