// Package docs holds the API's OpenAPI document, docs/openapi.yaml, for
// the server to serve and the tests to check the API against.
package docs

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"go.yaml.in/yaml/v3"
)

//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPIYAML is the OpenAPI document as written.
func OpenAPIYAML() []byte { return bytes.Clone(openAPIYAML) }

// OpenAPIJSON is the OpenAPI document as JSON, converted once.
func OpenAPIJSON() ([]byte, error) { return openAPIJSON() }

var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // descriptions quote <token> and the like
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml as JSON: %w", err)
	}
	return out.Bytes(), nil
})
