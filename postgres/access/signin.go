package access

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// dummyHash is compared against when the email is unknown, so a wrong
// email takes as long as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("tidemark timing equaliser"), bcrypt.DefaultCost)

// compareHash checks a password; tests observe it.
var compareHash = bcrypt.CompareHashAndPassword

// passwordChecks bounds the password checks running at once on this node
// to one for every two CPUs (at least one): a bcrypt compare is all CPU,
// so more at once only makes each slower, and a flood of sign-ins from
// many addresses must leave the node CPU for webhooks and pages. Up to 16
// a CPU more wait their turn (a burst of honest sign-ins queues for a
// second or two); past them a check is refused at once with
// domain.ErrSignInBusy.
var passwordChecks = newCheckGate(runtime.NumCPU()/2, 16*runtime.NumCPU())

// checkGate is a counting semaphore with a bounded waiting room.
type checkGate struct {
	tickets chan struct{} // one for each check running or waiting
	places  chan struct{} // one for each check running
}

func newCheckGate(places, waiting int) *checkGate {
	places = max(1, places)
	return &checkGate{tickets: make(chan struct{}, places+max(0, waiting)), places: make(chan struct{}, places)}
}

// enter takes a place, waiting for one while ctx lasts unless the waiting
// room is full; false: no place.
func (g *checkGate) enter(ctx context.Context) bool {
	select {
	case g.tickets <- struct{}{}:
	default:
		return false
	}
	select {
	case g.places <- struct{}{}:
		return true
	case <-ctx.Done():
		<-g.tickets
		return false
	}
}

func (g *checkGate) leave() {
	<-g.places
	<-g.tickets
}

// reserveLoginCheckSQL takes one password check slot for the email (”
// for all accounts) from the address key, unless max checks were taken
// within the window: no row comes back then. The guarded upsert locks the
// row, so concurrent attempts each see the slots taken before them. It
// answers the slot's time, by which a success gives it back.
const reserveLoginCheckSQL = `
INSERT INTO login_throttle AS t (email, address_key, checks) VALUES (@email, @address_key, ARRAY[now()])
ON CONFLICT (email, address_key) DO UPDATE
SET checks = ARRAY(SELECT c FROM unnest(t.checks) c WHERE c > now() - @window::interval ORDER BY c) || now(),
    last_at = now()
WHERE (SELECT count(*) FROM unnest(t.checks) c WHERE c > now() - @window::interval) < @max::int
RETURNING now()`

// returnCheckSQL gives back the slot taken at @at of the email, or of the
// address over all accounts for the empty email.
const returnCheckSQL = `
UPDATE login_throttle
SET checks = checks[:array_position(checks, @at::timestamptz) - 1] || checks[array_position(checks, @at::timestamptz) + 1:]
WHERE email = @email AND address_key = @address_key AND @at::timestamptz = ANY(checks)`

// dropEmptyCheckSQL drops an account's row left with no checks, as when
// the attempt that created it was refused for its address: a flood of
// made-up emails past the address's limit leaves no row each.
const dropEmptyCheckSQL = `
DELETE FROM login_throttle WHERE email = @email AND address_key = @address_key AND email <> '' AND cardinality(checks) = 0`

// forgetLoginChecksSQL clears the account's checks from the address after
// a success, and drops up to a thousand rows nobody has used within the
// window (skipping rows a sign-in in progress holds), so that each
// success does a bounded share of the tidying.
const forgetLoginChecksSQL = `
WITH stale AS (
    DELETE FROM login_throttle WHERE (email, address_key) IN (
        SELECT email, address_key FROM login_throttle WHERE last_at < now() - @window::interval
        LIMIT 1000 FOR UPDATE SKIP LOCKED)),
old_counts AS (
    DELETE FROM sign_in_refusals WHERE (address_key, window_start, outcome) IN (
        SELECT address_key, window_start, outcome FROM sign_in_refusals WHERE window_start < now() - interval '30 days'
        LIMIT 1000 FOR UPDATE SKIP LOCKED))
DELETE FROM login_throttle WHERE email = @email AND address_key = @address_key`

// countRefusalSQL counts a refused sign-in in its address's window and
// answers whether it is the window's first of that outcome.
const countRefusalSQL = `
INSERT INTO sign_in_refusals AS r (address_key, window_start, outcome, attempts)
VALUES (@address_key, date_bin(@window::interval, now(), timestamptz 'epoch'), @outcome, 1)
ON CONFLICT (address_key, window_start, outcome) DO UPDATE SET attempts = r.attempts + 1, last_at = now()
RETURNING r.attempts = 1`

// userByEmailSQL finds an operator who may sign in with a password: a
// disabled one, or one that single sign-on's password sign-in setting
// leaves out (off; or admins, and they are not a break-glass admin), is
// as unknown as an email that matches no one.
const userByEmailSQL = `
SELECT u.id, u.password_hash, u.is_admin, u.session_epoch FROM users u
WHERE u.email = @email AND u.disabled_at IS NULL
  AND NOT EXISTS (SELECT FROM sso_config c WHERE c.enabled AND (c.password_sign_in = 'off'
      OR (c.password_sign_in = 'admins' AND NOT (u.is_admin AND u.break_glass))))`

// signInTimeout bounds a sign-in, which outlives the request that started
// it: a client that hangs up after its password was checked must not
// leave its outcome unrecorded.
const signInTimeout = 30 * time.Second

// Authenticate implements domain.AccessService. A sign-in is two short
// transactions with the password check between them, when no connection
// is held: the first takes the throttle slots and reads the account, the
// second records the outcome. A slow hash never holds the pool, and at
// most passwordChecks run at once: one that finds no place gives its
// slots back and is refused.
func (s *Sessions) Authenticate(ctx context.Context, email, password, address string) (domain.User, error) {
	email = domain.NormalizeEmail(email)
	if err := domain.CheckSignIn(email, password); err != nil {
		return domain.User{}, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), signInTimeout)
	defer cancel()
	names, err := s.ids.Hasher(ctx)
	if err != nil {
		return domain.User{}, err
	}
	a := &attempt{email: email, addressChecks: s.addressChecks, names: names, args: pgx.NamedArgs{"email": email,
		"address_key": domain.LoginAddressKey(address), "window": domain.LoginWindow.String()}}
	var refusal error
	if err := pg.WithTx(ctx, s.read, func(tx pgx.Tx) (err error) {
		refusal, err = a.reserve(ctx, tx)
		return pg.Translate(err)
	}); err != nil {
		return domain.User{}, err
	}
	if refusal != nil {
		return domain.User{}, refusal
	}
	gate := passwordChecks
	if !gate.enter(ctx) {
		if err := pg.WithTx(ctx, s.read, func(tx pgx.Tx) error {
			return pg.Translate(a.giveBack(ctx, tx, a.email, ""))
		}); err != nil {
			return domain.User{}, err
		}
		return domain.User{}, domain.ErrSignInBusy
	}
	ok := func() bool {
		defer gate.leave()
		return compareHash(a.hash, []byte(password)) == nil && a.user.ID != 0
	}()
	if err := pg.WithTx(ctx, s.read, func(tx pgx.Tx) error { return pg.Translate(a.record(ctx, tx, ok)) }); err != nil {
		return domain.User{}, err
	}
	if !ok {
		return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED, "Wrong email or password.")
	}
	return a.user, nil
}

// attempt is one sign-in between its two transactions.
type attempt struct {
	email         string
	addressChecks int           // the address's limit over all accounts
	args          pgx.NamedArgs // email, address_key, window; at once the slots are taken
	user          domain.User   // ID 0: no such operator
	hash          []byte

	names domain.IDHasher // names refused emails in the audit log
}

// reserve takes the account's and the address's slots and reads the
// account; it returns the refusal to show when a limit is reached.
func (a *attempt) reserve(ctx context.Context, tx pgx.Tx) (refusal, err error) {
	take := func(email string, limit int) (at time.Time, ok bool, err error) {
		args := pgx.NamedArgs{"email": email, "max": limit, "address_key": a.args["address_key"], "window": a.args["window"]}
		err = tx.QueryRow(ctx, reserveLoginCheckSQL, args).Scan(&at)
		if errors.Is(err, pgx.ErrNoRows) {
			return at, false, nil
		}
		return at, err == nil, err
	}
	// The account's slot first, so that an attempt refused for its
	// account spends none of its address's, and the refusal names the
	// account. Every sign-in takes the two rows in the same order, so none
	// waits for another in a cycle.
	at, ok, err := take(a.email, domain.MaxLoginChecks)
	if err != nil || !ok {
		return a.throttled(ctx, tx, err, domain.ErrSignInThrottledAccount)
	}
	a.args["at"] = at
	if _, ok, err := take("", a.addressChecks); err != nil || !ok {
		if err == nil {
			err = a.giveBack(ctx, tx, a.email)
		}
		return a.throttled(ctx, tx, err, domain.ErrSignInThrottledAddress)
	}
	a.user.Email = a.email
	var hash string
	err = tx.QueryRow(ctx, userByEmailSQL, a.args).Scan(&a.user.ID, &hash, &a.user.IsAdmin, &a.user.SessionEpoch)
	if errors.Is(err, pgx.ErrNoRows) {
		a.user.ID, hash, err = 0, string(dummyHash), nil // a wrong email takes as long as a wrong password
	}
	a.hash = []byte(hash)
	return nil, err
}

// throttled counts an attempt throttled with limit, unless err.
func (a *attempt) throttled(ctx context.Context, tx pgx.Tx, err, limit error) (refusal, _ error) {
	if err != nil {
		return nil, err
	}
	return limit, a.count(ctx, tx, domain.SignInThrottled, a.names.SignInAuditName("email", a.email))
}

// giveBack gives back the slots the attempt took for each email, the
// empty one being the address's.
func (a *attempt) giveBack(ctx context.Context, tx pgx.Tx, emails ...string) error {
	for _, email := range emails {
		args := pgx.NamedArgs{"email": email, "address_key": a.args["address_key"], "at": a.args["at"]}
		if _, err := tx.Exec(ctx, returnCheckSQL, args); err != nil {
			return err
		}
		if email != "" {
			if _, err := tx.Exec(ctx, dropEmptyCheckSQL, args); err != nil {
				return err
			}
		}
	}
	return nil
}

// record writes the outcome of the password check.
func (a *attempt) record(ctx context.Context, tx pgx.Tx, ok bool) error {
	switch {
	case a.user.ID == 0:
		return a.count(ctx, tx, domain.SignInUnknownAccount, a.names.SignInAuditName("unknown", a.email))
	case !ok:
		return pg.Audit(ctx, tx, 0, domain.AuditSignIn, a.email, domain.SignInWrongPassword)
	}
	if err := a.giveBack(ctx, tx, ""); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, forgetLoginChecksSQL, a.args); err != nil {
		return err
	}
	return pg.Audit(ctx, tx, 0, domain.AuditSignIn, a.email, domain.SignInSucceeded)
}

// count counts a refusal that checked no real account's password in its
// address's window; only the window's first of each outcome is audited,
// by name (a hash of the email typed) as actor and target, so a flood
// adds a handful of rows to the append-only log, not one each.
func (a *attempt) count(ctx context.Context, tx pgx.Tx, outcome, name string) error {
	var first bool
	args := pgx.NamedArgs{"address_key": a.args["address_key"], "window": a.args["window"], "outcome": outcome}
	if err := tx.QueryRow(ctx, countRefusalSQL, args).Scan(&first); err != nil || !first {
		return err
	}
	if actor, ok := domain.ActorFrom(ctx); ok {
		actor.Name = name
		ctx = domain.WithActor(ctx, actor)
	}
	return pg.Audit(ctx, tx, 0, domain.AuditSignIn, name, outcome)
}
