package outbound_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/sink"
)

// The NATS destinations' own servers: the machine's server on 4222 admits
// anyone and has no monitoring port, so the tests of credentials and of
// connections run a nats-server of their own on free ports.

// natsd is a nats-server of a test's own.
type natsd struct {
	url     string // nats://127.0.0.1:PORT (tls:// for a TLS server)
	monitor string // http://127.0.0.1:PORT, its monitoring endpoint
	stderr  *bytes.Buffer
}

// startNATS runs nats-server with JetStream and a monitoring port, and
// with conf added to its configuration; it stops when t ends. Without the
// binary the test is skipped (failed with CI=true).
func startNATS(t *testing.T, scheme, conf string) natsd {
	t.Helper()
	exe, err := exec.LookPath("nats-server")
	if err != nil {
		exe = "/usr/sbin/nats-server"
	}
	if _, err := os.Stat(exe); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("needs nats-server: %v", err)
		}
		t.Skipf("needs nats-server: %v", err)
	}
	dir := t.TempDir()
	port, mport := freePort(t), freePort(t)
	file := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(file, fmt.Appendf(nil, "listen: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\njetstream { store_dir: %q }\n%s",
		port, mport, filepath.Join(dir, "js"), conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := natsd{url: fmt.Sprintf("%s://127.0.0.1:%d", scheme, port), monitor: fmt.Sprintf("http://127.0.0.1:%d", mport),
		stderr: &bytes.Buffer{}}
	cmd := exec.Command(exe, "-c", file)
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, s.stderr}, lockedWriter{&mu, s.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; {
		if resp, err := http.Get(s.monitor + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("nats-server did not start:\n%s", s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// senderConnections counts the server's client connections that the
// sender opened (by the name it gives them).
func (s natsd) senderConnections(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(s.monitor + "/connz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var connz struct {
		Connections []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&connz); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range connz.Connections {
		if c.Name == "tidemark destination sender" {
			n++
		}
	}
	return n
}

// stream creates a JetStream stream taking prefix.> on the server, through
// a connection with opts, and returns it.
func (s natsd) stream(t *testing.T, prefix string, opts ...nats.Option) jetstream.Stream {
	t.Helper()
	nc, err := nats.Connect(s.url, opts...)
	if err != nil {
		t.Fatalf("connect to %s: %v", s.url, err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: prefix, Subjects: []string{prefix + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// received waits for n messages of st and returns their bodies.
func received(t *testing.T, st jetstream.Stream, n int) []string {
	t.Helper()
	cons, err := st.OrderedConsumer(context.Background(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < n {
		msg, err := cons.Next(jetstream.FetchMaxWait(15 * time.Second))
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", len(got), n, err)
		}
		got = append(got, string(msg.Data()))
	}
	return got
}

// testCA is a private certificate authority and a certificate it signed
// for 127.0.0.1, as PEM.
func testCA(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
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
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// userCreds is the text of a .creds file of a new user that account
// signed.
func userCreds(t *testing.T, account nkeys.KeyPair) string {
	t.Helper()
	user, _ := nkeys.CreateUser()
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
	return string(creds)
}

// operatorConf is the configuration of a server in operator mode (NATS's
// decentralized authentication) that knows one account with JetStream,
// whose signing key it returns: it admits only that account's users, by
// their credentials files.
func operatorConf(t *testing.T) (conf string, account nkeys.KeyPair) {
	t.Helper()
	operator, _ := nkeys.CreateOperator()
	operatorPub, _ := operator.PublicKey()
	operatorJWT, err := jwt.NewOperatorClaims(operatorPub).Encode(operator)
	if err != nil {
		t.Fatal(err)
	}
	encode := func(kp nkeys.KeyPair, name string, js bool) string {
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
		return token
	}
	sys, _ := nkeys.CreateAccount()
	account, _ = nkeys.CreateAccount()
	sysPub, _ := sys.PublicKey()
	accountPub, _ := account.PublicKey()
	return fmt.Sprintf("operator: %q\nsystem_account: %q\nresolver: MEMORY\nresolver_preload: {\n  %s: %q\n  %s: %q\n}\n",
		operatorJWT, sysPub, accountPub, encode(account, "CRM", true), sysPub, encode(sys, "SYS", false)), account
}

// TestNATSCredentials is review 4's M6: a NATS destination connected with
// no credentials at all, so only a server that admits anyone could take
// its messages. It connects with the credentials file or the nkey seed it
// was created with, checking a tls:// server's certificate against its
// own certificate authorities; without them, or without the CA, the
// server refuses it and the attempt says why.
func TestNATSCredentials(t *testing.T) {
	t.Parallel()
	// A TLS server with a private CA that admits two nkey users: an admin,
	// and Tidemark's, which may publish on its prefix only (and receive
	// JetStream's acknowledgements), as the contract advises.
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	seed, _ := user.Seed()
	admin, _ := nkeys.CreateUser()
	adminPub, _ := admin.PublicKey()
	caPEM, certPEM, keyPEM := testCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, certPEM, 0o600)
	os.WriteFile(keyFile, keyPEM, 0o600)
	nkeyServer := startNATS(t, "tls", fmt.Sprintf(`tls { cert_file: %q, key_file: %q }
authorization { users: [
  { nkey: %q }
  { nkey: %q, permissions: { publish: "NKEYED.>", subscribe: "_INBOX.>" } }
] }
`, certFile, keyFile, adminPub, userPub))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	nkeyStream := nkeyServer.stream(t, "NKEYED", nats.Nkey(adminPub, admin.Sign),
		nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	// A server in operator mode that admits the users of one account.
	conf, account := operatorConf(t)
	credsServer := startNATS(t, "nats", conf)
	credsStream := credsServer.stream(t, "CREDS", nats.UserJWTAndSeed(jwtAndSeed(t, userCreds(t, account))))

	e := newEnv(t)
	withNKey, _ := e.destination(t, stream.NewDestination{NATSURL: nkeyServer.url, Subject: "NKEYED", AllowPrivate: true,
		NATS: stream.NATSAuth{NKey: string(seed), TLSCA: string(caPEM)}})
	withCreds, _ := e.destination(t, stream.NewDestination{NATSURL: credsServer.url, Subject: "CREDS", AllowPrivate: true,
		NATS: stream.NATSAuth{Creds: userCreds(t, account)}})
	// --allow-private lets the command line make one without credentials,
	// for a server inside the operator's network: these have none that
	// these servers admit.
	refused := []struct {
		d    stream.Destination
		want string
	}{}
	for _, c := range []struct {
		url  string
		auth stream.NATSAuth
		want string
	}{
		{nkeyServer.url, stream.NATSAuth{TLSCA: string(caPEM)}, "authorization violation"},
		{nkeyServer.url, stream.NATSAuth{NKey: string(seed)}, "certificate signed by unknown authority"},
		{credsServer.url, stream.NATSAuth{}, "authorization violation"},
	} {
		d, _ := e.destination(t, stream.NewDestination{NATSURL: c.url, Subject: "REFUSED", AllowPrivate: true, NATS: c.auth})
		refused = append(refused, struct {
			d    stream.Destination
			want string
		}{d, c.want})
	}
	if ds, err := e.store.Destinations(asCLI, e.p.TenantID); err != nil || ds[0].NATSAuth != stream.NATSAuthNKey || !ds[0].NATSTLSCA ||
		ds[1].NATSAuth != stream.NATSAuthCreds || ds[1].NATSTLSCA || ds[4].NATSAuth != "" {
		t.Fatalf("destinations %+v, %v; want what each connects with named", ds, err)
	}
	e.run(t, fast())
	e.ingest(t, "a", 1)

	for _, st := range []jetstream.Stream{nkeyStream, credsStream} {
		if got := received(t, st, 1); !strings.Contains(got[0], `"object_id":"a"`) {
			t.Errorf("%s received %s", st.CachedInfo().Config.Name, got[0])
		}
	}
	for _, r := range refused {
		waitFor(t, 15*time.Second, fmt.Sprintf("destination %d refused with %q", r.d.ID, r.want), func() bool {
			for _, a := range e.attempts(t, r.d.ID) {
				if strings.Contains(strings.ToLower(a.Error), r.want) {
					return true
				}
			}
			return false
		})
	}
	for _, d := range []stream.Destination{withNKey, withCreds} {
		for _, a := range e.attempts(t, d.ID) {
			if !a.Delivered() {
				t.Errorf("destination %d: attempt failed: %s", d.ID, a.Error)
			}
		}
	}
}

// jwtAndSeed splits a .creds file for nats.UserJWTAndSeed.
func jwtAndSeed(t *testing.T, creds string) (string, string) {
	t.Helper()
	token, err := nkeys.ParseDecoratedJWT([]byte(creds))
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey([]byte(creds))
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	return token, string(seed)
}

// TestNATSConnectionClosedWhenUnused is review 4's L2: the sender kept one
// connection per NATS URL it had ever published to, reconnecting forever,
// even after its destination was deleted. A connection nobody has
// published on for a lease's ttl is closed, and the next change connects
// again.
func TestNATSConnectionClosedWhenUnused(t *testing.T) {
	t.Parallel()
	s := startNATS(t, "nats", "")
	st := s.stream(t, "IDLE")
	e := newEnv(t)
	e.destination(t, stream.NewDestination{NATSURL: s.url, Subject: "IDLE", AllowPrivate: true})
	o := fast()
	e.run(t, o)
	e.ingest(t, "a", 1)
	received(t, st, 1)
	if n := s.senderConnections(t); n != 1 {
		t.Fatalf("%d sender connections after a publish, want 1", n)
	}
	waitFor(t, o.LeaseTTL+10*time.Second, "the unused connection closed", func() bool { return s.senderConnections(t) == 0 })
	e.ingest(t, "a", 2)
	if got := received(t, st, 2); !strings.Contains(got[1], `"revision":2`) {
		t.Fatalf("after the connection closed: %s", got[1])
	}
}

// TestCheckNATSAuth: what a NATS destination's credentials must be, and
// that a refusal never quotes them.
func TestCheckNATSAuth(t *testing.T) {
	t.Parallel()
	account, _ := nkeys.CreateAccount()
	creds := userCreds(t, account)
	_, seed := jwtAndSeed(t, creds)
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	token, _ := nkeys.ParseDecoratedJWT([]byte(creds))
	mismatched := strings.Replace(creds, seed, string(otherSeed), 1)
	accountSeed, _ := account.Seed()
	caPEM, _, _ := testCA(t)
	for _, tc := range []struct {
		auth stream.NATSAuth
		want string // "" accepted
	}{
		{stream.NATSAuth{Creds: creds, TLSCA: string(caPEM)}, ""},
		{stream.NATSAuth{NKey: seed}, ""},
		{stream.NATSAuth{TLSCA: string(caPEM)}, ""},
		{stream.NATSAuth{Creds: mismatched}, "its seed is not that of the user its JWT names"},
		{stream.NATSAuth{Creds: "not a creds file"}, "its user JWT does not decode"},
		{stream.NATSAuth{NKey: string(accountSeed)}, "nats_nkey is not a user nkey seed"},
		{stream.NATSAuth{NKey: seed[:len(seed)-2]}, "nats_nkey is not a user nkey seed"},
		{stream.NATSAuth{NKey: seed, TLSCA: "-----BEGIN CERTIFICATE-----\nno\n-----END CERTIFICATE-----"}, "nats_tls_ca holds no PEM certificate"},
	} {
		err := sink.CheckNATSAuth(tc.auth)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.auth.Kind(), err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.auth.Kind(), err, tc.want)
		case err != nil && (strings.Contains(err.Error(), seed[:8]) || strings.Contains(err.Error(), string(accountSeed[:8])) ||
			strings.Contains(err.Error(), string(otherSeed[:8])) || strings.Contains(err.Error(), token[:16])):
			t.Errorf("the refusal quotes the credentials: %v", err)
		}
	}
}
