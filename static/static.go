// Package static embeds the console's CSS, JavaScript and images. URLs carry
// a content hash so browsers can cache them for good.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
)

//go:embed css js img
var FS embed.FS

var hashes = map[string]string{}

func init() {
	fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(FS, path)
			sum := sha256.Sum256(b)
			hashes[path] = hex.EncodeToString(sum[:6])
		}
		return nil
	})
}

// URL returns the cache-busting URL of an embedded file, e.g.
// URL("css/app.css") = "/static/css/app.css?v=1a2b3c4d5e6f".
func URL(path string) string {
	h, ok := hashes[path]
	if !ok {
		panic("static: no embedded file " + path)
	}
	return "/static/" + path + "?v=" + h
}
