// Package mcpbridge is tidemark mcp: it bridges the Model Context
// Protocol's stdio transport, which desktop assistants use to start a
// local server, to Tidemark's MCP endpoint (POST /api/v1/mcp,
// docs/contract/api.md#mcp). Each JSON-RPC message read from standard
// input, one a line, is posted to the endpoint with the API token; each
// answer, JSON or server-sent events, is written to standard output, one
// message a line. Notifications get no answer.
package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
)

// Env is what the command uses of the tidemark command's environment.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Flags is the FlagSet of the command named.
	Flags func(name string) *flag.FlagSet
}

// TokenVariable names the environment variable holding the API token:
// not a flag, so that it shows in no process list.
const TokenVariable = "TIDEMARK_TOKEN"

// Flags declares tidemark mcp's flags.
func Flags(fs *flag.FlagSet) (endpoint *string) {
	return fs.String("url", "", "Tidemark's MCP endpoint, such as https://tidemark.example.com/api/v1/mcp; "+
		"a URL without a path gets /api/v1/mcp (required)")
}

// Run is tidemark mcp: it bridges standard input and output to the
// endpoint until standard input ends or ctx is done.
func Run(ctx context.Context, e Env, args []string) error {
	fs := e.Flags("mcp")
	endpoint := Flags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *endpoint == "" {
		fs.Usage()
		return errors.New("mcp: --url is required")
	}
	u, err := endpointURL(*endpoint)
	if err != nil {
		return err
	}
	token := strings.TrimSpace(e.Getenv(TokenVariable))
	if token == "" {
		return fmt.Errorf("mcp: set %s to an API token of the tenant (tidemark token create)", TokenVariable)
	}
	b := &Bridge{URL: u, Token: token, Client: http.DefaultClient, Log: e.Stderr}
	return b.Run(ctx, e.Stdin, e.Stdout)
}

// endpointURL checks the --url given, completing a bare server URL.
func endpointURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("mcp: --url must be an http or https URL, such as https://tidemark.example.com/api/v1/mcp; got %q", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/api/v1/mcp"
	}
	return u.String(), nil
}

// Bridge carries an assistant's messages to an MCP endpoint over HTTP.
type Bridge struct {
	URL    string
	Token  string // sent as a bearer token
	Client *http.Client
	Log    io.Writer // where failures go, for the assistant's log

	mu      sync.Mutex // guards out and the fields below
	out     io.Writer
	version string // the protocol version initialize agreed, sent with each later message
	session string // Mcp-Session-Id, for servers that keep sessions (Tidemark does not)
}

// maxMessage bounds one message read, from the assistant or the server.
const maxMessage = 16 << 20

// inFlight bounds the messages forwarded at once: an assistant may send a
// call while another runs, and the server caps a token's reads anyway.
const inFlight = 4

// Run forwards each message of in until in ends or ctx is done, and
// writes the answers to out as they come.
func (b *Bridge) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	b.out = out
	lines := make(chan []byte)
	var readErr error
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if msg := bytes.TrimSpace(line); len(msg) > 0 {
				select {
				case lines <- msg:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				return
			}
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, inFlight)
	for {
		select {
		case <-ctx.Done():
			return nil // the assistant stopped us
		case msg, ok := <-lines:
			if !ok {
				return readErr
			}
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				b.forward(ctx, msg)
			})
		}
	}
}

// message is what the bridge reads of a message: enough to name it in
// the headers the transport asks for, and to answer it on a failure.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string         `json:"name"`
		URI  string         `json:"uri"`
		Meta map[string]any `json:"_meta"`
	} `json:"params"`
}

// forward posts one message and writes its answers.
func (b *Bridge) forward(ctx context.Context, raw []byte) {
	var m message
	json.Unmarshal(raw, &m) // a batch or a malformed message is sent as it is; the server answers it
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.URL, bytes.NewReader(raw))
	if err != nil {
		b.fail(m.ID, err.Error())
		return
	}
	b.setHeaders(req, m)
	resp, err := b.Client.Do(req)
	if err != nil {
		b.fail(m.ID, err.Error())
		return
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		b.mu.Lock()
		b.session = s
		b.mu.Unlock()
	}
	body := io.LimitReader(resp.Body, maxMessage)
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		return // a notification or a response, taken
	case resp.StatusCode < 300 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		if err := readEvents(body, func(data []byte) { b.answer(m, data) }); err != nil {
			b.fail(m.ID, "reading the server's event stream: "+err.Error())
		}
		return
	}
	data, err := io.ReadAll(body)
	switch {
	case err != nil:
		b.fail(m.ID, "reading the server's answer: "+err.Error())
	case resp.StatusCode < 300 || isJSONRPC(data):
		b.answer(m, data)
	default:
		b.fail(m.ID, resp.Status+": "+errorText(data))
	}
}

// setHeaders sets what the Streamable HTTP transport asks of a message.
func (b *Bridge) setHeaders(req *http.Request, m message) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+b.Token)
	b.mu.Lock()
	version, session := b.version, b.session
	b.mu.Unlock()
	if v, ok := m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string); ok {
		version = v
	}
	var name string
	switch m.Method {
	case "tools/call", "prompts/get":
		name = m.Params.Name
	case "resources/read":
		name = m.Params.URI
	}
	for header, value := range map[string]string{"Mcp-Protocol-Version": version, "Mcp-Session-Id": session,
		"Mcp-Method": m.Method, "Mcp-Name": name} {
		if value != "" {
			req.Header.Set(header, value)
		}
	}
}

// answer writes one message of the server, on a line of its own; the
// answer to initialize gives the protocol version of later messages.
func (b *Bridge) answer(m message, data []byte) {
	var line bytes.Buffer
	if err := json.Compact(&line, data); err != nil {
		b.fail(m.ID, "the server answered something that is not JSON: "+errorText(data))
		return
	}
	line.WriteByte('\n')
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.Method == "initialize" {
		var r struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(data, &r) == nil && r.Result.ProtocolVersion != "" {
			b.version = r.Result.ProtocolVersion
		}
	}
	b.out.Write(line.Bytes())
}

// fail logs a failure to forward a message and, for a request, answers it
// with a JSON-RPC error, so that the assistant does not wait for ever.
func (b *Bridge) fail(id json.RawMessage, reason string) {
	fmt.Fprintln(b.Log, "tidemark mcp:", reason)
	if len(id) == 0 || string(id) == "null" {
		return
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32000, "message": "tidemark mcp: " + reason}})
	b.mu.Lock()
	defer b.mu.Unlock()
	b.out.Write(append(msg, '\n'))
}

// isJSONRPC reports whether an error answer carries a JSON-RPC message,
// which the assistant reads itself.
func isJSONRPC(data []byte) bool {
	var m struct {
		JSONRPC string `json:"jsonrpc"`
	}
	return json.Unmarshal(data, &m) == nil && m.JSONRPC == "2.0"
}

// errorText is an error answer's message: the API's {"error"} when it is
// one, else the text itself, shortened.
func errorText(data []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

// readEvents reads a server-sent event stream, calling message with the
// data of each message event.
func readEvents(r io.Reader, message func(data []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxMessage)
	var (
		data    []byte
		hasData bool
		event   string
	)
	dispatch := func() {
		if hasData && (event == "" || event == "message") {
			message(data)
		}
		data, hasData, event = nil, false, ""
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			dispatch()
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
		case "event":
			event = value
		}
	}
	dispatch()
	return sc.Err()
}
