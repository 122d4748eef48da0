package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/testdb"
)

// readmeTourURL is the tour's server, as the README's section addresses it.
const readmeTourURL = "http://127.0.0.1:8080"

// readTools are the MCP tools of a read-only token, as the README names them.
var readTools = []string{"find_record", "get_conflict", "inspect_delivery", "list_alerts", "list_conflicts",
	"list_events", "read_changes", "record_timeline"}

// TestReadmeAssistants runs the README's "API clients and assistants"
// against a real serve: its Go lines are those of the client's README
// (whose program TestGoClient runs), its curl lists the read tools of the
// token it creates, and the assistant configuration it shows, given that
// token, starts tidemark mcp and lists the same tools through it with the
// official SDK's client.
func TestReadmeAssistants(t *testing.T) {
	e2e.Require(t, "the go command and bash (the test builds tidemark and runs the README's section)")
	t.Parallel()
	blocks := codeBlocks(readmeSection(t, "API clients and assistants"))
	if len(blocks) != 3 {
		t.Fatalf("the section has %d code blocks, want the Go lines, the curl and the configuration", len(blocks))
	}
	goLines, curl, config := blocks[0], blocks[1], blocks[2]
	inClientReadme(t, goLines)

	dbURL := testdb.NewURL(t)
	exe := buildTidemark(t)
	env := append(serverEnv(dbURL, testEncryptionKey), "PATH="+filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
	shell := bashIn(t, t.TempDir(), env, "no secret is printed here but the token, on purpose")
	shell("tidemark tenant create demo")
	srv := startServer(t, exe, env)

	out := shell(strings.ReplaceAll(curl, readmeTourURL, srv.base) + "\necho\necho \"$TIDEMARK_TOKEN\"")
	answer, token, _ := strings.Cut(strings.TrimSpace(out), "\n")
	var listed struct {
		Result struct{ Tools []struct{ Name string } } `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &listed); err != nil {
		t.Fatalf("the curl answered %q: %v", answer, err)
	}
	var names []string
	for _, tool := range listed.Result.Tools {
		names = append(names, tool.Name)
	}
	if slices.Sort(names); !slices.Equal(names, readTools) {
		t.Errorf("the curl's read token lists the tools %v, want %v", names, readTools)
	}

	var servers struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(config), &servers); err != nil {
		t.Fatalf("the assistant configuration is not JSON: %v\n%s", err, config)
	}
	server, ok := servers.MCPServers["tidemark"]
	if !ok || server.Command != "tidemark" || server.Env["TIDEMARK_TOKEN"] != "tmk_..." {
		t.Fatalf("the configuration starts %+v, want tidemark with TIDEMARK_TOKEN", server)
	}
	cmd := exec.Command(exe, server.Args...)
	for i, arg := range cmd.Args {
		cmd.Args[i] = strings.ReplaceAll(arg, readmeTourURL, srv.base)
	}
	cmd.Env = append(os.Environ(), "TIDEMARK_TOKEN="+token)
	ctx := context.Background()
	session, err := sdk.NewClient(&sdk.Implementation{Name: "assistant", Version: "1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting through %v: %v", cmd.Args, err)
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if slices.Sort(names); !slices.Equal(names, readTools) {
		t.Errorf("through tidemark mcp the token lists %v, want %v", names, readTools)
	}
}

// inClientReadme fails the test unless every line of code, in order, is a
// line of the program in client/go/README.md.
func inClientReadme(t *testing.T, code string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "client", "go", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	program := strings.Split(string(b), "\n")
	for _, line := range strings.Split(code, "\n") {
		i := slices.IndexFunc(program, func(p string) bool { return strings.TrimSpace(p) == strings.TrimSpace(line) })
		if i < 0 {
			t.Fatalf("client/go/README.md has no line %q after the ones before it, so the README shows code no test runs", line)
		}
		program = program[i+1:]
	}
}
