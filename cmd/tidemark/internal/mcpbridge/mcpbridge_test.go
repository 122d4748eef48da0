package mcpbridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/mcpbridge"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
)

// tidemark is a server on a fresh database with tenant acme, whose
// provider crm received contact c-1, and a read-only token of acme.
func tidemark(t *testing.T) (url, token string) {
	t.Helper()
	pool := testdb.New(t)
	store, err := postgres.New(pool, bytes.Repeat([]byte("k"), 32))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(web.Config{Store: store, Sessions: store.SessionStore(), Ping: pool.Ping,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	t.Cleanup(srv.Close)
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	tenant, err := store.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	secret := provider.NewStandardSecret()
	if _, err := store.ConnectProvider(ctx, tenant.ID, "crm", "standard", secret, nil); err != nil {
		t.Fatal(err)
	}
	token, err = store.CreateAPIToken(ctx, tenant.ID, domain.NewAPIToken{Name: "desktop", Access: domain.TokenRead})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"contact.snapshot","timestamp":"2026-11-29T10:00:00Z","data":{"contact_id":"c-1","revision":3,"snapshot":{"company":"Acme"}}}`)
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(secret, "evt-1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/acme/crm", bytes.NewReader(body))
	req.Header.Set("webhook-id", "evt-1")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("delivery: %v %v", resp, err)
	}
	resp.Body.Close()
	return srv.URL, token
}

// assistant runs tidemark mcp as a desktop assistant does: it writes
// messages to its standard input and reads its standard output.
type assistant struct {
	t      *testing.T
	stdin  *io.PipeWriter
	lines  chan string
	stderr *syncBuffer
	done   chan error
}

func start(t *testing.T, args []string, token string) *assistant {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &assistant{t: t, stdin: inW, lines: make(chan string, 10), stderr: &syncBuffer{}, done: make(chan error, 1)}
	env := mcpbridge.Env{Stdin: inR, Stdout: outW, Stderr: a.stderr,
		Getenv: func(name string) string { return map[string]string{mcpbridge.TokenVariable: token}[name] },
		Flags:  func(name string) *flag.FlagSet { return flag.NewFlagSet(name, flag.ContinueOnError) }}
	go func() {
		a.done <- mcpbridge.Run(context.Background(), env, args)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
	}()
	t.Cleanup(func() { inW.Close() })
	return a
}

// send writes one message; want, when set, is the id of the answer to
// read next.
func (a *assistant) send(msg string, want int) map[string]any {
	a.t.Helper()
	if _, err := io.WriteString(a.stdin, msg+"\n"); err != nil {
		a.t.Fatal(err)
	}
	if want == 0 {
		return nil
	}
	select {
	case line := <-a.lines:
		var answer map[string]any
		if err := json.Unmarshal([]byte(line), &answer); err != nil || answer["id"] != float64(want) {
			a.t.Fatalf("answer %q, want the JSON-RPC answer of id %d", line, want)
		}
		return answer
	case <-time.After(30 * time.Second):
		a.t.Fatalf("no answer to %s; stderr: %s", msg, a.stderr)
	}
	return nil
}

// stop closes standard input, as an assistant does to stop a server,
// and returns what the command returned.
func (a *assistant) stop() error {
	a.t.Helper()
	a.stdin.Close()
	select {
	case err := <-a.done:
		for line := range a.lines {
			a.t.Errorf("output after the last answer: %s", line)
		}
		return err
	case <-time.After(30 * time.Second):
		a.t.Fatal("tidemark mcp went on after its standard input closed")
	}
	return nil
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"desktop","version":"1"}}}`

// TestBridgeToTidemark: an assistant initializes, lists the tools of its
// read-only token and calls one through tidemark mcp, given the server's
// bare URL; the notification it sends gets no answer.
func TestBridgeToTidemark(t *testing.T) {
	t.Parallel()
	url, token := tidemark(t)
	a := start(t, []string{"--url", url}, token)
	init := a.send(initialize, 1)
	result, _ := init["result"].(map[string]any)
	if info, _ := result["serverInfo"].(map[string]any); info["name"] != "tidemark" || result["protocolVersion"] != "2025-06-18" {
		t.Fatalf("initialize: %v", init)
	}
	a.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0)
	list := a.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 2)
	tools, _ := list["result"].(map[string]any)["tools"].([]any)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if len(names) != 8 || strings.Contains(strings.Join(names, " "), "resolve_conflict") {
		t.Fatalf("tools of a read-only token: %v", names)
	}
	found := a.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"find_record",`+
		`"arguments":{"provider":"crm","object_type":"contact","object_id":"c-1"}}}`, 3)
	if text := fmt.Sprint(found["result"]); !strings.Contains(text, `"company":"Acme"`) || strings.Contains(text, "isError:true") {
		t.Fatalf("find_record c-1: %v", found)
	}
	refused := a.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"resolve_conflict",`+
		`"arguments":{"conflict_id":1,"resolution":"keep"}}}`, 4)
	if refused["error"] == nil && !strings.Contains(fmt.Sprint(refused["result"]), "isError:true") {
		t.Fatalf("resolve_conflict with a read-only token: %v, want it refused", refused)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestBridgeAnswersRefusals: a request the server refuses gets a JSON-RPC
// error saying why, and the reason goes to standard error too.
func TestBridgeAnswersRefusals(t *testing.T) {
	t.Parallel()
	url, _ := tidemark(t)
	a := start(t, []string{"--url", url + "/api/v1/mcp"}, "tmk_revoked")
	answer := a.send(initialize, 1)
	msg := fmt.Sprint(answer["error"])
	if !strings.Contains(msg, "401 Unauthorized: invalid, expired or revoked API token") {
		t.Fatalf("initialize with a bad token: %v", answer)
	}
	a.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.stderr.String(), "invalid, expired or revoked API token") {
		t.Fatalf("stderr: %q", a.stderr)
	}
}

// TestBridgeReadsEventStreams: a server that answers with server-sent
// events (the SDK's default) is bridged too, each event a line.
func TestBridgeReadsEventStreams(t *testing.T) {
	t.Parallel()
	server := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "multi\nline " + in.Text}}}, nil, nil
		})
	var sawToken atomic.Value
	handler := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		sawToken.Store(r.Header.Get("Authorization"))
		return server
	}, &sdk.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)

	a := start(t, []string{"--url", srv.URL + "/mcp"}, "tmk_x")
	a.send(initialize, 1)
	echo := a.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, 2)
	if !strings.Contains(fmt.Sprint(echo["result"]), "multi\nline hi") || sawToken.Load() != "Bearer tmk_x" {
		t.Fatalf("echo over an event stream: %v (token %q)", echo, sawToken.Load())
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestBridgeNeedsAToken: without TIDEMARK_TOKEN, tidemark mcp says how to
// get one; a --url that is no http URL is refused.
func TestBridgeNeedsAToken(t *testing.T) {
	t.Parallel()
	env := mcpbridge.Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
		Getenv: func(string) string { return "" },
		Flags:  func(name string) *flag.FlagSet { return flag.NewFlagSet(name, flag.ContinueOnError) }}
	for args, want := range map[string]string{
		"--url http://127.0.0.1:8080":     "set TIDEMARK_TOKEN to an API token of the tenant",
		"--url 127.0.0.1:8080/api/v1/mcp": "--url must be an http or https URL",
	} {
		if err := mcpbridge.Run(context.Background(), env, strings.Fields(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tidemark mcp %s: %v, want %q", args, err, want)
		}
	}
}

// syncBuffer is a buffer the bridge writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
