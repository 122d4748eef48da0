package shape

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/changejson"
)

// Shaper is a destination's filter and transform, compiled. It is safe
// for concurrent use: the sender evaluates it for each change, from each
// of a destination's senders.
type Shaper struct {
	filter    *filterProgram // nil: every message is sent
	transform cel.Program    // nil: the data is the change
}

// Compile compiles a destination's expressions ("" for none), refusing
// them as Check does.
func Compile(filter, transform string) (*Shaper, error) {
	s := &Shaper{}
	if filter != "" {
		f, err := compileFilter(filter)
		if err != nil {
			return nil, err
		}
		s.filter = &f
	}
	if transform != "" {
		prg, err := compileTransform(transform)
		if err != nil {
			return nil, err
		}
		s.transform = prg
	}
	return s, nil
}

// Result is what a destination makes of a change: whether its filter
// matched, and, when it matched and there is a transform, the message's
// data (nil: the change itself).
type Result struct {
	Matched bool
	Data    json.RawMessage
}

// EvalError is an expression that failed on one message: a missing key,
// a division by zero, a result of the wrong type, the cost limit.
type EvalError struct {
	Field string // FieldFilter or FieldTransform
	Err   error
}

func (e *EvalError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *EvalError) Unwrap() error { return e.Err }

// Change evaluates the filter and the transform on c. An error is an
// *EvalError.
func (s *Shaper) Change(c stream.Change) (Result, error) {
	if s == nil || (s.filter == nil || !s.filter.onChange) && s.transform == nil {
		return Result{Matched: true}, nil
	}
	vars, err := changeVars(c)
	if err != nil {
		return Result{}, err
	}
	if s.filter != nil && s.filter.onChange {
		ok, err := evalBool(s.filter.prg, vars)
		if err != nil || !ok {
			return Result{}, err
		}
	}
	if s.transform == nil {
		return Result{Matched: true}, nil
	}
	data, err := evalMap(s.transform, vars)
	if err != nil {
		return Result{}, err
	}
	return Result{Matched: true, Data: data}, nil
}

// Alert evaluates the filter on an alert event: whether it is sent.
func (s *Shaper) Alert(e alerting.Event) (bool, error) {
	if s == nil || s.filter == nil || !s.filter.onAlert {
		return true, nil
	}
	return evalBool(s.filter.prg, map[string]any{VarChange: map[string]any{}, VarAlert: alertVar(e)})
}

// changeVars are the variables of an evaluation on c: change as the feed
// gives it (changejson), its snapshot decoded from JSON, and alert empty.
func changeVars(c stream.Change) (map[string]any, error) {
	j := changejson.From(c)
	var snapshot any
	if err := json.Unmarshal(j.Snapshot, &snapshot); err != nil {
		return nil, &EvalError{Field: FieldFilter, Err: fmt.Errorf("the change's snapshot does not decode: %w", err)}
	}
	change := map[string]any{"id": j.ID, "type": j.Type, "provider": j.Provider, "object_type": j.ObjectType,
		"object_id": j.ObjectID, "revision": optional(j.Revision), "previous_revision": optional(j.PreviousRevision),
		"changed": j.Changed, "snapshot": snapshot, "event_id": optional(j.EventID), "delivery_id": optional(j.DeliveryID),
		"committed_at": j.CommittedAt}
	return map[string]any{VarChange: change, VarAlert: map[string]any{}}, nil
}

// optional is *p, or nil (CEL's null) for none.
func optional[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// alertVar is an alert event as a standard alert message's data shows it
// (docs/contract/destinations.md#alert-messages), with the event's type.
func alertVar(e alerting.Event) map[string]any {
	a := e.Alert
	v := map[string]any{"type": e.Type, "id": a.ID, "rule": string(a.Rule), "summary": a.Summary, "value": a.Value,
		"threshold": a.Threshold, "window": a.Window.String(), "started_at": changejson.Time(a.StartedAt), "resolved_at": nil}
	if a.Provider != "" {
		v["provider"] = a.Provider
	}
	if a.ResolvedAt != nil {
		v["resolved_at"] = changejson.Time(*a.ResolvedAt)
	}
	return v
}

func evalBool(prg cel.Program, vars map[string]any) (bool, error) {
	out, _, err := prg.Eval(vars)
	if err != nil {
		return false, &EvalError{Field: FieldFilter, Err: err}
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &EvalError{Field: FieldFilter, Err: fmt.Errorf("returned %s, not a bool", out.Type().TypeName())}
	}
	return bool(b), nil
}

func evalMap(prg cel.Program, vars map[string]any) (json.RawMessage, error) {
	out, _, err := prg.Eval(vars)
	if err != nil {
		return nil, &EvalError{Field: FieldTransform, Err: err}
	}
	if _, ok := out.(traits.Mapper); !ok {
		return nil, &EvalError{Field: FieldTransform, Err: fmt.Errorf("returned %s, not a map", out.Type().TypeName())}
	}
	v, err := plain(out)
	if err != nil {
		return nil, &EvalError{Field: FieldTransform, Err: err}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, &EvalError{Field: FieldTransform, Err: err}
	}
	return data, nil
}

// plain is a CEL value as JSON takes it: integers stay integers, a
// timestamp is RFC 3339, a duration Go's form, bytes base64. Map keys must
// be strings.
func plain(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		return uint64(v), nil
	case types.Double:
		return float64(v), nil
	case types.String:
		return string(v), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(v), nil
	case types.Timestamp:
		return v.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return v.Duration.String(), nil
	case traits.Mapper:
		out := map[string]any{}
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key is %s, not a string", k.Type().TypeName())
			}
			pv, err := plain(v.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(ks)] = pv
		}
		return out, nil
	case traits.Lister:
		var out []any
		for it := v.Iterator(); it.HasNext() == types.True; {
			pv, err := plain(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, pv)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	case *types.Err:
		return nil, v
	}
	return nil, fmt.Errorf("a value of type %s has no JSON form", v.Type().TypeName())
}

// Cache holds the Shapers of the expressions in use, compiled once: a
// sender evaluates a destination's for each of its changes.
type Cache struct {
	mu sync.Mutex
	m  map[[2]string]*Shaper
}

// maxCached bounds a Cache: past it, it starts again (expressions that a
// PATCH replaced are dropped with the rest).
const maxCached = 1024

// Get returns the Shaper of filter and transform, nil when both are ""
// (every change is sent as it is). An expression stored before a change
// of its language that no longer compiles is an *EvalError.
func (c *Cache) Get(filter, transform string) (*Shaper, error) {
	if filter == "" && transform == "" {
		return nil, nil
	}
	key := [2]string{filter, transform}
	c.mu.Lock()
	s, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := Compile(filter, transform)
	if err != nil {
		field := FieldFilter
		if filter == "" || Check(filter, "") == nil {
			field = FieldTransform
		}
		return nil, &EvalError{Field: field, Err: errors.New(strings.TrimPrefix(domain.ErrorMessage(err), field+": "))}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[[2]string]*Shaper{}
	}
	c.m[key] = s
	return s, nil
}
