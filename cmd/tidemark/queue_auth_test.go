package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/tidemark/tidemark/internal/queue"
	"github.com/tidemark/tidemark/internal/queue/queuetest"
	"github.com/tidemark/tidemark/internal/testdb"
)

// queuePassword is the NATS password of the tests' account: it must never
// be printed or logged.
const queuePassword = "pw-S3cret-queue-9d1e"

// authNATS is a private nats-server with JetStream that admits user
// "tidemark" with queuePassword and the nkey user it returns the seed file
// of, and nobody else.
func authNATS(t *testing.T) (s *natsServer, seedFile string) {
	t.Helper()
	if _, err := os.Stat(natsExe()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("needs nats-server: %v", err)
		}
		t.Skipf("needs nats-server: %v", err)
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	dir := t.TempDir()
	seedFile = filepath.Join(dir, "worker.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `listen: "127.0.0.1:%d"
jetstream { store_dir: %q }
authorization {
  users: [
    { user: "tidemark", password: %q }
    { nkey: %q }
  ]
}
`, port, filepath.Join(dir, "js"), queuePassword, pub), 0o600); err != nil {
		t.Fatal(err)
	}
	return runNATS(t, port, dir, "-c", conf), seedFile
}

// TestQueueCredentials: the queue connects to a NATS that requires
// authentication with a password in the URL or with --queue-nkey, and is
// refused without them or with a wrong one.
func TestQueueCredentials(t *testing.T) {
	t.Parallel()
	s, seedFile := authNATS(t)
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	wrongSeed := filepath.Join(t.TempDir(), "other.nk")
	os.WriteFile(wrongSeed, otherSeed, 0o600)

	for _, c := range []struct {
		name string
		cfg  queue.Config
		ok   bool
	}{
		{"password", queue.Config{URL: "nats://tidemark:" + queuePassword + "@" + s.addr()}, true},
		{"nkey", queue.Config{URL: s.url(), NKey: seedFile}, true},
		{"nothing", queue.Config{URL: s.url()}, false},
		{"wrong password", queue.Config{URL: "nats://tidemark:wrong@" + s.addr()}, false},
		{"unknown nkey", queue.Config{URL: s.url(), NKey: wrongSeed}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Keys, c.cfg.Stream = queuetest.Keys, "AUTHTEST"
			c.cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			q, err := queue.Open(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err = q.Ensure(ctx, true)
			if c.ok && err != nil {
				t.Errorf("with the right credentials: %v", err)
			}
			if !c.ok && err == nil {
				t.Error("NATS admitted the queue without its credentials")
			}
			if err != nil && strings.Contains(err.Error(), queuePassword) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
	if _, err := queue.Open(queue.Config{URL: s.url(), Keys: queuetest.Keys, NKey: filepath.Join(t.TempDir(), "missing.nk")}); err == nil ||
		!strings.Contains(err.Error(), "--queue-nkey") {
		t.Errorf("a missing seed file: %v", err)
	}
	if _, err := queue.Open(queue.Config{URL: s.url(), Keys: queuetest.Keys, Credentials: filepath.Join(t.TempDir(), "missing.creds")}); err == nil ||
		!strings.Contains(err.Error(), "--queue-creds") {
		t.Errorf("a missing credentials file: %v", err)
	}
}

// operatorNATS is a private nats-server with JetStream in operator
// (decentralized JWT) mode: it trusts a new operator, knows its system
// account and one account with JetStream, and admits only users whose JWT
// that account signed. It returns the credentials file of such a user.
func operatorNATS(t *testing.T) (s *natsServer, credsFile string) {
	t.Helper()
	if _, err := os.Stat(natsExe()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("needs nats-server: %v", err)
		}
		t.Skipf("needs nats-server: %v", err)
	}
	operator, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	operatorPub, _ := operator.PublicKey()
	operatorJWT, err := jwt.NewOperatorClaims(operatorPub).Encode(operator)
	if err != nil {
		t.Fatal(err)
	}
	account := func(name string, js bool) (nkeys.KeyPair, string, string) {
		t.Helper()
		kp, err := nkeys.CreateAccount()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		claims := jwt.NewAccountClaims(pub)
		claims.Name = name
		if js {
			claims.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		token, err := claims.Encode(operator)
		if err != nil {
			t.Fatal(err)
		}
		return kp, pub, token
	}
	_, sysPub, sysJWT := account("SYS", false)
	acct, acctPub, acctJWT := account("TIDEMARK", true)

	dir := t.TempDir()
	credsFile = userCreds(t, acct, filepath.Join(dir, "worker.creds"))
	port := freePort(t)
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `listen: "127.0.0.1:%d"
jetstream { store_dir: %q }
operator: %q
system_account: %q
resolver: MEMORY
resolver_preload: {
  %s: %q
  %s: %q
}
`, port, filepath.Join(dir, "js"), operatorJWT, sysPub, acctPub, acctJWT, sysPub, sysJWT), 0o600); err != nil {
		t.Fatal(err)
	}
	return runNATS(t, port, dir, "-c", conf), credsFile
}

// userCreds writes to path the credentials file (JWT and seed) of a new
// user whose JWT account signed, and returns path.
func userCreds(t *testing.T, account nkeys.KeyPair, path string) string {
	t.Helper()
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	token, err := jwt.NewUserClaims(pub).Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestQueueCredsFile: --queue-creds connects the queue to a NATS server in
// operator mode with the credentials file of a user of a known account,
// which can create the stream; without credentials, or with those of a
// user an unknown account signed, NATS refuses it.
func TestQueueCredsFile(t *testing.T) {
	t.Parallel()
	s, credsFile := operatorNATS(t)
	stranger, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	strangerCreds := userCreds(t, stranger, filepath.Join(t.TempDir(), "stranger.creds"))

	for _, c := range []struct {
		name, creds string
		ok          bool
	}{
		{"credentials", credsFile, true},
		{"nothing", "", false},
		{"unknown account", strangerCreds, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := queue.Open(queue.Config{URL: s.url(), Credentials: c.creds, Keys: queuetest.Keys, Stream: "CREDSTEST",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err = q.Ensure(ctx, true)
			if c.ok && err != nil {
				t.Errorf("with the credentials file: %v\n%s", err, s.proc.stderr.String())
			}
			if !c.ok && err == nil {
				t.Error("NATS admitted the queue without the credentials of a known account")
			}
			if err != nil && strings.Contains(err.Error(), "SUA") {
				t.Errorf("the error shows a seed: %v", err)
			}
		})
	}
}

// TestQueuePasswordNeverShown: serve --queue with a password in the URL and
// a worker with an nkey apply a delivery end to end, and neither their
// output nor their logs, nor those of a worker refused for a wrong
// password, show the password; queued mode refuses to start without
// TIDEMARK_ENCRYPTION_KEY.
func TestQueuePasswordNeverShown(t *testing.T) {
	t.Parallel()
	s, seedFile := authNATS(t)
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	created, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard")
	if err != nil {
		t.Fatal(err)
	}
	secret := regexp.MustCompile(`whsec_\S+`).FindString(created)
	withPassword := "nats://tidemark:" + queuePassword + "@" + s.addr()
	stream := "PWTEST"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type proc struct {
		out, errOut syncBuffer
		done        chan error
	}
	start := func(args ...string) *proc {
		p := &proc{done: make(chan error, 1)}
		go func() { p.done <- run(ctx, args, func(k string) string { return env[k] }, nil, &p.out, &p.errOut) }()
		return p
	}
	await := func(p *proc, re *regexp.Regexp) string {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !re.MatchString(p.out.String()); {
			select {
			case err := <-p.done:
				t.Fatalf("exited: %v\n%s", err, p.errOut.String())
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("did not start:\n%s", p.errOut.String())
			}
		}
		return re.FindStringSubmatch(p.out.String())[1]
	}
	srv := start("serve", "--addr", "127.0.0.1:0", "--queue", withPassword, "--stream", stream)
	base := await(srv, regexp.MustCompile(`listening on (http://\S+)`))
	worker := start("worker", "--queue", s.url(), "--queue-nkey", seedFile, "--stream", stream)
	await(worker, regexp.MustCompile(`(consuming stream)`))
	refused := start("worker", "--queue", "nats://tidemark:"+queuePassword+"x@"+s.addr(), "--stream", stream)
	await(refused, regexp.MustCompile(`(consuming stream)`))

	pool := checkerPool(t, url)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, err := tidemark(t, env, "", "send", "--url", base+"/webhooks/acme/crm", "--secret", secret, "--id", "e-1"); err != nil {
			t.Fatal(err)
		}
		if queryInt(t, pool, `SELECT count(*) FROM events WHERE event_id = 'e-1' AND outcome = 'applied'`) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery was not applied:\nserve:\n%s\nworker:\n%s", srv.errOut.String(), worker.errOut.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // the refused worker's reconnects log
	if !strings.Contains(strings.ToLower(refused.errOut.String()), "authorization violation") {
		t.Errorf("the refused worker's log does not say why:\n%s", refused.errOut.String())
	}
	cancel()
	for _, p := range []*proc{srv, worker, refused} {
		<-p.done
		all := p.out.String() + p.errOut.String()
		if strings.Contains(all, queuePassword) {
			t.Errorf("the password is shown:\n%s", grepLines(all, queuePassword))
		}
	}
	if !strings.Contains(srv.errOut.String(), "nats://xxxxx@"+s.addr()) {
		t.Errorf("serve's log does not name the redacted URL:\n%s", srv.errOut.String())
	}

	noKey := map[string]string{"DATABASE_URL": testdb.NewURL(t)}
	if _, _, err := tidemark(t, noKey, "", "worker", "--queue", s.url(), "--queue-nkey", seedFile); err == nil ||
		!strings.Contains(err.Error(), "TIDEMARK_ENCRYPTION_KEY") {
		t.Errorf("worker without TIDEMARK_ENCRYPTION_KEY: %v", err)
	}
	if _, _, err := tidemark(t, noKey, "", "serve", "--addr", "127.0.0.1:0", "--queue", s.url(), "--queue-nkey", seedFile); err == nil ||
		!strings.Contains(err.Error(), "TIDEMARK_ENCRYPTION_KEY") {
		t.Errorf("serve --queue without TIDEMARK_ENCRYPTION_KEY: %v", err)
	}
}

// TestQueueTLSCA: --queue-tls-ca verifies a NATS server whose certificate
// a private CA signed; without it the connection is refused.
func TestQueueTLSCA(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(natsExe()); err != nil {
		t.Skipf("needs nats-server: %v", err)
	}
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "nats"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKeyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	caFile := write("ca.pem", "CERTIFICATE", caDER)
	port := freePort(t)
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "listen: \"127.0.0.1:%d\"\njetstream { store_dir: %q }\ntls { cert_file: %q, key_file: %q }\n",
		port, filepath.Join(dir, "js"), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", srvKeyDER)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := runNATS(t, port, dir, "-c", conf)
	for _, c := range []struct {
		name, ca string
		ok       bool
	}{{"with the CA", caFile, true}, {"without", "", false}} {
		q, err := queue.Open(queue.Config{URL: "tls://" + s.addr(), TLSCA: c.ca, Keys: queuetest.Keys, Stream: "TLSTEST",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = q.Ensure(ctx, true)
		cancel()
		q.Close()
		if c.ok != (err == nil) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
