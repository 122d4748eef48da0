// Package migrations embeds Tidemark's numbered SQL migrations.
package migrations

import "embed"

// FS holds the migrations, applied in file-name order by goose.
//
//go:embed *.sql
var FS embed.FS
