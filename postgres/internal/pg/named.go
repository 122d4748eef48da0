package pg

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// Statement is SQL written with pgx's @name parameters, rewritten once at
// start-up into PostgreSQL's $n form. pgx.NamedArgs would re-lex the SQL
// text on every call, which on the ingest path cost a tenth of the server's
// CPU.
type Statement struct {
	SQL   string
	Names []string // Names[i] is the parameter $i+1
}

var paramName = regexp.MustCompile(`@([a-z_][a-z0-9_]*)`)

// Named rewrites sql with pgx's own lexer, so only real parameters (not an
// @ inside a literal) become $n.
func Named(sql string) Statement {
	self := pgx.NamedArgs{}
	for _, m := range paramName.FindAllStringSubmatch(sql, -1) {
		self[m[1]] = m[1]
	}
	rewritten, order, err := self.RewriteQuery(context.Background(), nil, sql, nil)
	if err != nil {
		panic(fmt.Sprintf("rewrite named statement: %v", err))
	}
	st := Statement{SQL: rewritten}
	for _, n := range order {
		st.Names = append(st.Names, n.(string))
	}
	return st
}

// Args lists the values of a in parameter order; a missing name is an error
// in the caller, so it panics rather than sending NULL.
func (st Statement) Args(a pgx.NamedArgs) []any {
	out := make([]any, len(st.Names))
	for i, n := range st.Names {
		v, ok := a[n]
		if !ok {
			panic(fmt.Sprintf("statement parameter @%s has no value", n))
		}
		out[i] = v
	}
	return out
}
