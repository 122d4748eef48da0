// Package shape is a destination's filter and transform: CEL expressions
// (cel.dev/cel-go) over the change a message carries, checked when an
// owner sets them and evaluated by the sender for each change
// (docs/contract/destinations.md#filters-and-transforms). A filter
// returns a bool, whether the message is sent; a transform returns a map,
// the message's data instead of the change.
package shape

import (
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"

	"github.com/tidemark/tidemark/domain"
)

// Bounds of an expression.
const (
	// MaxBytes is the longest expression accepted.
	MaxBytes = 4 << 10
	// MaxEstimatedCost bounds the cost CEL estimates for an expression in
	// the worst case, each list, map and string of a change or alert taken
	// as maxSizeHint long: one pass over a change's fields is far below it,
	// a pass within a pass over them is refused.
	MaxEstimatedCost = 1_000_000
	// RuntimeCostLimit stops one evaluation that costs more, whatever the
	// estimate said (cel.CostLimit); it is an evaluation error.
	RuntimeCostLimit = 1_000_000
	// maxSizeHint is the size estimated for a list, map or string reached
	// through change or alert: a snapshot's fields, its changed list, one
	// of its values.
	maxSizeHint = 10_000
)

// The variables of the expressions.
const (
	VarChange = "change"
	VarAlert  = "alert"
)

// Field names which expression a message is refused for: "filter" or
// "transform".
const (
	FieldFilter    = "filter"
	FieldTransform = "transform"
)

// Environments: a filter sees change and alert, a transform only change
// (alert messages are not transformed). Both have CEL's standard library,
// has(), and the string functions of ext.Strings.
var (
	filterEnv    = newEnv(VarChange, VarAlert)
	transformEnv = newEnv(VarChange)
)

// compiling serialises compile: see there.
var compiling sync.Mutex

func newEnv(vars ...string) *cel.Env {
	opts := []cel.EnvOption{ext.Strings(), cel.CrossTypeNumericComparisons(true), cel.DefaultUTCTimeZone(true)}
	for _, v := range vars {
		opts = append(opts, cel.Variable(v, cel.MapType(cel.StringType, cel.DynType)))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		panic("shape: " + err.Error())
	}
	return env
}

// Check compiles and type-checks a destination's filter and transform
// ("" for none) and returns nil, or an EINVALID error naming the field
// and, for a syntax or type error, its line and column as CEL reports
// them: "filter: ERROR:1:9: undeclared reference to 'chnage' ...".
func Check(filter, transform string) error {
	if filter != "" {
		if _, err := compileFilter(filter); err != nil {
			return err
		}
	}
	if transform != "" {
		if _, err := compileTransform(transform); err != nil {
			return err
		}
	}
	return nil
}

// filterProgram is a compiled filter and which messages it applies to.
type filterProgram struct {
	prg cel.Program
	// onChange, onAlert: a filter that names only alert lets every change
	// through, one that names only change every alert; one that names both
	// or neither is evaluated on both, the absent variable an empty map.
	onChange, onAlert bool
}

func compileFilter(expr string) (filterProgram, error) {
	ast, prg, err := compile(filterEnv, FieldFilter, expr, "a bool", func(t *types.Type) bool { return t.Kind() == types.BoolKind })
	if err != nil {
		return filterProgram{}, err
	}
	names := referenced(ast)
	change, alert := names[VarChange], names[VarAlert]
	return filterProgram{prg: prg, onChange: change || !alert, onAlert: alert || !change}, nil
}

func compileTransform(expr string) (cel.Program, error) {
	_, prg, err := compile(transformEnv, FieldTransform, expr, "a map", func(t *types.Type) bool {
		if t.Kind() != types.MapKind {
			return false
		}
		key := t.Parameters()[0].Kind()
		return key == types.StringKind || key == types.DynKind
	})
	return prg, err
}

// compile parses, checks and plans expr in env; its result's type must be
// one want accepts, or dyn (checked at each evaluation).
func compile(env *cel.Env, field, expr, wantName string, want func(*types.Type) bool) (*cel.Ast, cel.Program, error) {
	if len(expr) > MaxBytes {
		return nil, nil, domain.Errorf(domain.EINVALID, "%s is %d bytes; at most %d", field, len(expr), MaxBytes)
	}
	if strings.TrimSpace(expr) == "" {
		return nil, nil, domain.Errorf(domain.EINVALID, "%s is blank: give an expression, or none", field)
	}
	// cel-go's checker races with itself when one Env compiles two
	// comprehensions at once (v0.33.3, seen under -race): compiling is
	// rare (each expression once, then cached), so it takes turns.
	compiling.Lock()
	defer compiling.Unlock()
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, nil, issues(field, iss)
	}
	out := ast.OutputType()
	if !want(out) && out.Kind() != types.DynKind {
		return nil, nil, domain.Errorf(domain.EINVALID, "%s must return %s, not %s", field, wantName, out)
	}
	est, err := env.EstimateCost(ast, sizeHints{})
	if err != nil {
		return nil, nil, domain.Errorf(domain.EINVALID, "%s: its cost cannot be estimated: %v", field, err)
	}
	if est.Max > MaxEstimatedCost {
		return nil, nil, domain.Errorf(domain.EINVALID,
			"%s: its estimated cost, up to %d, exceeds %d (a list or map of a change taken as %d long): avoid nested comprehensions",
			field, est.Max, MaxEstimatedCost, maxSizeHint)
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(RuntimeCostLimit))
	if err != nil {
		return nil, nil, domain.Errorf(domain.EINVALID, "%s: %v", field, err)
	}
	return ast, prg, nil
}

// issues formats CEL's errors as "field: ERROR:line:column: message",
// without the source snippet it prints under each, several joined by "; ".
func issues(field string, iss *cel.Issues) error {
	var msgs []string
	for _, e := range iss.Errors() {
		msgs = append(msgs, fmt.Sprintf("ERROR:%d:%d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
	}
	return domain.Errorf(domain.EINVALID, "%s: %s", field, strings.Join(msgs, "; "))
}

// referenced lists the variables ast names.
func referenced(ast *cel.Ast) map[string]bool {
	names := map[string]bool{}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name != "" {
			names[ref.Name] = true
		}
	}
	return names
}

// sizeHints sizes what change and alert hold for the cost estimate.
type sizeHints struct{}

func (sizeHints) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if p := n.Path(); len(p) > 0 && (p[0] == VarChange || p[0] == VarAlert) {
		s := cost.SizeEstimate{Min: 0, Max: maxSizeHint}
		return &s
	}
	return nil
}

func (sizeHints) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	return nil
}
