package main

import (
	"context"
	"fmt"
)

func (e cliEnv) benchIngest(ctx context.Context, args []string) error {
	return fmt.Errorf("bench ingest: not built yet")
}
