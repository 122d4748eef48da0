package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxResult bounds the text of one tool result: an assistant's context is
// small, and what is left out stays one call away (the next cursor).
const maxResult = 64 << 10

// answer is one answer of the tenant API.
type answer struct {
	status     int
	body       []byte
	retryAfter string // of a 429 or a 503
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// call serves one request to the tenant API in-process, as the caller: the
// API authenticates their token again and applies its rights, read slots
// and audit exactly as to any client. path is under the tenant's base and
// its segments are escaped (seg).
func (t tools) call(ctx context.Context, method, path string, query url.Values, body any) (answer, error) {
	c, ok := callerFrom(ctx)
	if !ok {
		return answer{}, errors.New("no caller in the context") // ServeHTTP puts one there
	}
	target := apiURL(ctx, path)
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var content io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		content = bytes.NewReader(raw)
	}
	// The API's router routes the request afresh, not as a subroute of the
	// MCP route whose context it comes in.
	ctx = context.WithValue(ctx, chi.RouteCtxKey, (*chi.Context)(nil))
	req, err := http.NewRequestWithContext(ctx, method, target, content)
	if err != nil {
		return answer{}, err
	}
	req.RemoteAddr = c.remoteAddr
	req.Header.Set("Authorization", c.authorization)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := &recorder{header: http.Header{}}
	t.api.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return answer{status: w.status, body: bytes.TrimSpace(w.body.Bytes()), retryAfter: w.header.Get("Retry-After")}, nil
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// recorder keeps an in-process answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// result is a tool's result: its text, and notes on what it left out.
func result(text []byte, notes ...string) *sdk.CallToolResult {
	content := []sdk.Content{&sdk.TextContent{Text: string(text)}}
	for _, n := range notes {
		content = append(content, &sdk.TextContent{Text: n})
	}
	return &sdk.CallToolResult{Content: content}
}

// refusal is the result of an API answer that is not a success: the
// status and the API's error, flagged as an error for the assistant.
func refusal(a answer) *sdk.CallToolResult {
	var e struct {
		Error     string `json:"error"`
		RequestID string `json:"request_id"` // of a 500, in the log
	}
	msg := string(a.body)
	if json.Unmarshal(a.body, &e) == nil && e.Error != "" {
		msg = e.Error
		if e.RequestID != "" {
			msg += " (request id " + e.RequestID + ")"
		}
	}
	if a.retryAfter != "" {
		msg += " (retry after " + a.retryAfter + " s)"
	}
	r := result(fmt.Appendf(nil, "%d %s: %s", a.status, http.StatusText(a.status), msg))
	r.IsError = true
	return r
}

// object answers one API object, or the API's refusal. An object over
// maxResult has its longest string field cut (a delivery's body), else
// its text, with a note saying so and where the whole is.
func (t tools) object(ctx context.Context, method, path string, body any) (*sdk.CallToolResult, error) {
	a, err := t.call(ctx, method, path, nil, body)
	if err != nil {
		return nil, err
	}
	if !a.ok() {
		return refusal(a), nil
	}
	whole := "the change is made; read it back with the other tools"
	if method == http.MethodGet {
		whole = "the whole is at GET " + apiURL(ctx, path) + " of the JSON API"
	}
	return fitObject(a.body, whole), nil
}

// fitObject keeps an object's text within maxResult; whole says where the
// whole object is.
func fitObject(body []byte, whole string) *sdk.CallToolResult {
	if len(body) <= maxResult {
		return result(body)
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil {
		longest := ""
		for k, v := range fields {
			if len(v) > len(fields[longest]) && v[0] == '"' {
				longest = k
			}
		}
		var s string
		if longest != "" && json.Unmarshal(fields[longest], &s) == nil {
			over := len(body) - maxResult + 1024 // room for the note's escapes
			if over < len(s) {
				fields[longest] = marshal(cutUTF8(s, len(s)-over))
				if text := marshal(fields); len(text) <= maxResult {
					return result(text, fmt.Sprintf("Cut: %q is %d bytes; this shows its first %d (the answer stays under %d bytes); %s.",
						longest, len(s), len(s)-over, maxResult, whole))
				}
			}
		}
	}
	return result([]byte(cutUTF8(string(body), maxResult)),
		fmt.Sprintf("Cut: the answer is %d bytes; this shows its first %d; %s.", len(body), maxResult, whole))
}

// cutUTF8 is s cut to at most n bytes, at a character's start.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// list is one page of an API list.
type list struct {
	path      string
	query     url.Values // the filters
	key       string     // the list's name in the answer
	cursorArg string     // the query parameter the cursor goes in
	cursor    string
	limit     int
	budget    int // the bytes the page may take; 0 means maxResult
}

// page fetches one page of a list, shrinking it while its JSON is over the
// budget: at most limit items, fewer when they are large, so that the
// API's own next_cursor continues right after the last item shown. A
// single item over the budget comes alone, cut, with its cursor. It
// returns the page's JSON and its notes, or the API's refusal.
func (t tools) page(ctx context.Context, l list) ([]byte, []string, *sdk.CallToolResult, error) {
	budget := l.budget
	if budget <= 0 {
		budget = maxResult
	}
	limit := clampLimit(l.limit)
	query := url.Values{}
	for k, v := range l.query {
		if len(v) > 0 && v[0] != "" {
			query[k] = v
		}
	}
	if l.cursor != "" {
		query.Set(l.cursorArg, l.cursor)
	}
	for {
		query.Set("limit", strconv.Itoa(limit))
		a, err := t.call(ctx, http.MethodGet, l.path, query, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		if !a.ok() {
			return nil, nil, refusal(a), nil
		}
		if len(a.body) <= budget {
			var notes []string
			if limit < clampLimit(l.limit) {
				notes = append(notes, fmt.Sprintf("This page holds %d items to stay under %d bytes; "+
					"call again with %s set to next_cursor for the next ones.", limit, budget, l.cursorArg))
			}
			return a.body, notes, nil, nil
		}
		fit, next := itemsWithin(a.body, l.key, budget)
		if limit == 1 {
			cut := cutUTF8(string(a.body), budget-512)
			return []byte(cut), []string{fmt.Sprintf("Cut: this page's one item is larger than %d bytes; this shows its first bytes. "+
				"The whole item is the JSON API's GET %s; the next page starts at cursor %q.",
				budget, apiURL(ctx, l.path)+"?"+query.Encode(), next)}, nil, nil
		}
		limit = max(1, min(fit, limit-1)) // fewer, even if fit says otherwise: the items may have grown since
	}
}

// itemsWithin counts the first items of a list answer whose JSON fits
// within budget, and reads its next_cursor.
func itemsWithin(body []byte, key string, budget int) (int, string) {
	var page map[string]json.RawMessage
	if json.Unmarshal(body, &page) != nil {
		return 0, ""
	}
	var next string
	json.Unmarshal(page["next_cursor"], &next)
	var items []json.RawMessage
	if json.Unmarshal(page[key], &items) != nil {
		return 0, next
	}
	size := len(body) - len(page[key]) + len("[]") + 512 // the rest of the answer, and the notes
	for i, it := range items {
		size += len(it) + 1
		if size > budget {
			return i, next
		}
	}
	return len(items), next
}

// Page sizes of the tools: the API's lists go to 500, an assistant's
// context holds far less.
const (
	defaultLimit = 20
	maxLimit     = 100
)

func clampLimit(n int) int {
	if n <= 0 {
		return defaultLimit
	}
	return min(n, maxLimit)
}

// marshal is v as JSON, as the API writes it (no HTML escapes).
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil // the tools marshal JSON they read, and strings
	}
	return bytes.TrimSpace(b.Bytes())
}

// apiURL is where the JSON API serves path of the caller's tenant.
func apiURL(ctx context.Context, path string) string {
	c, _ := callerFrom(ctx)
	return "/api/v1/tenants/" + seg(c.grant.Tenant.Slug) + path
}
