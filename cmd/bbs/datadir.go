package main

import (
	"fmt"
	"os"
)

// prepareDataDir makes the board's data dir, which holds its SQLite
// database, 0700: created so, or tightened when it was looser. Nobody but
// the board's user has any business in it.
func prepareDataDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	if info.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("data_dir: make %s 0700: %w", dir, err)
		}
	}
	return nil
}
