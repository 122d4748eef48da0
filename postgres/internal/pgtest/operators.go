package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
)

// Password is the password of the operators NewOperator creates.
const Password = "correct horse battery"

// OperatorStore is what NewOperator needs of a store.
type OperatorStore interface {
	domain.OperatorService
	Pool() *pgxpool.Pool
}

// NewOperator creates an operator (an admin when admin is set) with
// Password and returns them.
func NewOperator(t testing.TB, s OperatorStore, email string, admin bool) domain.User {
	t.Helper()
	ctx := AsOperator(context.Background())
	if err := s.CreateUser(ctx, email, Password, admin, "", domain.RoleOperator); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := s.Pool().QueryRow(ctx, `SELECT id FROM users WHERE email = $1`, email).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return domain.User{ID: id, Email: email, IsAdmin: admin}
}

// Scalar runs sql, which answers one integer, on pool.
func Scalar(t testing.TB, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// WantCode fails the test unless err has the domain error code.
func WantCode(t testing.TB, err error, code string) {
	t.Helper()
	if domain.ErrorCode(err) != code {
		t.Fatalf("error %v (code %s), want code %s", err, domain.ErrorCode(err), code)
	}
}
