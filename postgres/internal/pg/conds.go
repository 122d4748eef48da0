package pg

import (
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

// Conds collects the conditions of a list query's filter, which the
// statement holds in a %s, and sets their arguments.
type Conds struct {
	args  pgx.NamedArgs
	conds []string
}

// NewConds returns conditions whose arguments go to args.
func NewConds(args pgx.NamedArgs) *Conds { return &Conds{args: args} }

// Add appends cond and sets its argument name to value.
func (c *Conds) Add(cond, name string, value any) {
	c.conds = append(c.conds, cond)
	c.args[name] = value
}

// Cond appends cond, which takes no argument of its own.
func (c *Conds) Cond(cond string) { c.conds = append(c.conds, cond) }

// SQL returns the conditions, each on a line of its own indented by indent
// after "AND"; "" when there are none.
func (c *Conds) SQL(indent string) string {
	if len(c.conds) == 0 {
		return ""
	}
	and := "\n" + indent + "AND "
	return and + strings.Join(c.conds, and)
}

// The conditions of a delivery filter, on deliveries d.
const (
	deliveryLogProvider = `d.provider_id = (SELECT id FROM providers WHERE tenant_id = @tenant_id AND name = @provider)`
	deliveryLogStatus   = `d.status = @status`
	deliveryLogClass    = `d.status >= @class * 100 AND d.status < @class * 100 + 100`
	// A delivery has the outcome when one of its events has it: a probe of
	// the event log's primary key.
	deliveryLogOutcome = `EXISTS (SELECT FROM events e WHERE e.tenant_id = @tenant_id AND e.received_at = d.received_at
                              AND e.delivery_id = d.id AND e.outcome = @outcome)`
	deliveryLogFrom   = `d.received_at >= @from`
	deliveryLogBefore = `d.received_at < @before`
)

// DeliveryConds returns the conditions of f, each after "AND", and sets
// their arguments: the delivery log and the replay jobs filter alike.
func DeliveryConds(f domain.DeliveryFilter, args pgx.NamedArgs) string {
	c := NewConds(args)
	if f.Provider != "" {
		c.Add(deliveryLogProvider, "provider", f.Provider)
	}
	if f.Status != 0 {
		c.Add(deliveryLogStatus, "status", f.Status)
	}
	if f.Class != 0 {
		c.Add(deliveryLogClass, "class", f.Class)
	}
	if f.Outcome != "" {
		c.Add(deliveryLogOutcome, "outcome", string(f.Outcome))
	}
	if !f.From.IsZero() {
		c.Add(deliveryLogFrom, "from", f.From)
	}
	if !f.Before.IsZero() {
		c.Add(deliveryLogBefore, "before", f.Before)
	}
	return c.SQL("  ")
}
