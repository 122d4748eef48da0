package webtest

import (
	"net/url"
	"strings"
)

// fill puts real values of tenant globex into a route pattern.
func Fill(pattern string, values map[string]string) string {
	for k, v := range values {
		pattern = strings.ReplaceAll(pattern, "{"+k+"}", url.PathEscape(v))
	}
	return strings.TrimSuffix(pattern, "/*")
}
