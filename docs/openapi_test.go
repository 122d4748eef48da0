package docs_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/tidemark/tidemark/docs"
)

// TestOpenAPIValid: the document is a valid OpenAPI 3.1 document, and
// its JSON form says the same.
func TestOpenAPIValid(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPIYAML())
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() || doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}

	raw, err := docs.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(doc)
	b, _ := json.Marshal(fromJSON)
	var x, y any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	if !reflect.DeepEqual(x, y) {
		t.Error("the JSON form of the document differs from the YAML")
	}
}
