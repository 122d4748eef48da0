package queue

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tidemark/tidemark/domain/alerting"
)

// AlertFacts implements alerting.QueueWatcher: for every tenant with a
// delivery waiting or a dead letter, when the oldest waiting one was
// stored, how many dead letters it has and when the newest was set aside.
// Each tenant has one subject in each stream (its partition is its own).
func (q *Queue) AlertFacts(ctx context.Context) ([]alerting.QueueFact, error) {
	facts := map[int64]*alerting.QueueFact{}
	fact := func(subject string) (*alerting.QueueFact, bool) {
		id, err := strconv.ParseInt(subject[strings.LastIndexByte(subject, '.')+1:], 10, 64)
		if err != nil {
			return nil, false // not a tenant's subject
		}
		if facts[id] == nil {
			facts[id] = &alerting.QueueFact{TenantID: id}
		}
		return facts[id], true
	}
	in, err := q.js.Stream(ctx, q.cfg.Stream)
	if err != nil {
		return nil, unavailable(err)
	}
	info, err := in.Info(ctx, jetstream.WithSubjectFilter(q.cfg.Stream+".in.>"))
	if err != nil {
		return nil, unavailable(err)
	}
	for subject, n := range info.State.Subjects {
		f, ok := fact(subject)
		if !ok || n == 0 {
			continue
		}
		first, err := in.GetMsg(ctx, info.State.FirstSeq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // taken by a worker meanwhile
		}
		if err != nil {
			return nil, unavailable(err)
		}
		f.Oldest = first.Time
	}
	dead, err := q.js.Stream(ctx, q.DeadStream())
	if err != nil {
		return nil, unavailable(err)
	}
	info, err = dead.Info(ctx, jetstream.WithSubjectFilter(q.cfg.Stream+".dead.>"))
	if err != nil {
		return nil, unavailable(err)
	}
	for subject, n := range info.State.Subjects {
		f, ok := fact(subject)
		if !ok || n == 0 {
			continue
		}
		last, err := dead.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // expired meanwhile
		}
		if err != nil {
			return nil, unavailable(err)
		}
		f.DeadLetters, f.LastDead = int64(n), last.Time
	}
	out := make([]alerting.QueueFact, 0, len(facts))
	for _, f := range facts {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b alerting.QueueFact) int { return cmp.Compare(a.TenantID, b.TenantID) })
	return out, nil
}
