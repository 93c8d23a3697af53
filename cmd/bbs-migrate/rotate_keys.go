package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/migrations"
)

// boardConfig is the part of the board's JSON config file (cmd/bbs's
// Config) that rotate-keys reads: the keys, and the database when no
// --dsn is given. Every other key of the file is ignored, so one file
// serves both commands.
type boardConfig struct {
	DatabaseDriver string            `json:"database_driver"`
	DatabaseDSN    string            `json:"database_dsn"`
	DataDir        string            `json:"data_dir"`
	EncryptionKeys map[string]string `json:"encryption_keys"`
	ActiveKeyLabel string            `json:"active_key_label"`
}

// sqliteFileName is the board's SQLite file in its data_dir (as cmd/bbs
// names it).
const sqliteFileName = "board.db"

func loadBoardConfig(path string) (*boardConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var cfg boardConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	return &cfg, nil
}

type rotateFlags struct {
	config        string
	batchSize     int
	maxPasses     int
	progressEvery time.Duration
}

func rotateKeysCommand(opts *options) *cobra.Command {
	f := &rotateFlags{}
	cmd := &cobra.Command{
		Use:   "rotate-keys",
		Short: "Re-encrypt run definitions and operation parameters under the board's active key",
		Long: `rotate-keys re-encrypts every run definition (run_infos.definition) and
operation parameters blob (operations.parameters) that is plain or sealed
under a key other than active_key_label, reading encryption_keys and
active_key_label from the board's config file (--config). It runs while the
boards serve traffic: each batch is its own short transaction, and a row
changed meanwhile is left to the next pass. It repeats passes until one
finds nothing to do (at most --max-passes); interrupted, it can simply be
run again. The database is --driver/--dsn, or else the config's
database_driver and database_dsn (or data_dir/board.db for sqlite).

Before running it, every board must have the new key in encryption_keys and
as active_key_label; remove the old key only after it reports that nothing
is left.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRotateKeys(cmd.Context(), cmd, opts, f)
		},
	}
	cmd.Flags().StringVar(&f.config, "config", "", "the board's JSON config `file`, for encryption_keys and active_key_label (required)")
	cmd.Flags().IntVar(&f.batchSize, "batch-size", sqldb.DefaultRotateBatchSize, "rows per transaction")
	cmd.Flags().IntVar(&f.maxPasses, "max-passes", 3, "passes to make at most, stopping at the first that finds nothing to do")
	cmd.Flags().DurationVar(&f.progressEvery, "progress-every", time.Second, "print a progress line at most this often within a table (0: after every batch)")
	return cmd
}

func runRotateKeys(ctx context.Context, cmd *cobra.Command, opts *options, f *rotateFlags) error {
	if f.config == "" {
		return errors.New("rotate-keys: --config is required (the board's config file, with encryption_keys and active_key_label)")
	}
	if f.batchSize <= 0 || f.maxPasses <= 0 {
		return errors.New("rotate-keys: --batch-size and --max-passes must be positive")
	}
	cfg, err := loadBoardConfig(f.config)
	if err != nil {
		return err
	}
	keys, err := sqldb.ParseEncryptionKeys(cfg.EncryptionKeys, cfg.ActiveKeyLabel)
	if err != nil {
		return fmt.Errorf("config %s: %v", f.config, err)
	}
	if keys == nil {
		return fmt.Errorf("config %s: no encryption_keys: there is no key to rotate to", f.config)
	}
	driver, dsn, err := rotateDatabase(cmd, opts, cfg)
	if err != nil {
		return err
	}
	if driver == migrations.SQLite {
		// A missing file is a wrong path, not an empty board to create.
		if _, err := os.Stat(dsn); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no sqlite database at %s", dsn)
		}
	}
	conn, err := sqldb.Open(ctx, driver, dsn)
	if err != nil {
		return err
	}
	defer conn.Close()
	runner, err := migrations.NewRunner(conn, driver)
	if err != nil {
		return err
	}
	// The tables must be the ones this binary knows.
	if err := runner.Validate(ctx); err != nil {
		return err
	}
	store := sqldb.New(conn, driver, sqldb.WithEncryption(keys))
	out := cmd.OutOrStdout()
	active := keys.ActiveLabel()
	fmt.Fprintf(out, "rotating to key %q (encryption_keys: %s) on %s, batches of %d\n",
		active, strings.Join(keys.Labels(), " "), driver, f.batchSize)

	var rewritten int64
	for pass := 1; pass <= f.maxPasses; pass++ {
		started := time.Now()
		progress, err := store.RotateKeys(ctx, sqldb.RotateOptions{BatchSize: f.batchSize, Progress: progressPrinter(out, pass, f.progressEvery)})
		total := progress.Total()
		rewritten += total.Reencrypted
		fmt.Fprintf(out, "pass %d: %s in %s\n", pass, describeProgress(progress), time.Since(started).Round(time.Millisecond))
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted in pass %d (what it re-encrypted stays so): run rotate-keys again to go on", pass)
			}
			return err
		}
		if total.Reencrypted == 0 && total.Skipped == 0 {
			if pass == 1 {
				fmt.Fprintf(out, "nothing to do: all %d rows are under key %q\n", total.Seen, active)
			} else {
				fmt.Fprintf(out, "done: %d rows re-encrypted under key %q; pass %d found nothing left plain or under another key\n",
					rewritten, active, pass)
			}
			return nil
		}
	}
	return fmt.Errorf("rows were still re-encrypted or skipped in pass %d of %d: make sure every board has active_key_label %q, then run rotate-keys again",
		f.maxPasses, f.maxPasses, active)
}

// rotateDatabase is the database to rotate: the --driver and --dsn flags
// when --dsn is given, else the config's.
func rotateDatabase(cmd *cobra.Command, opts *options, cfg *boardConfig) (driver, dsn string, err error) {
	if opts.dsn != "" {
		return opts.driver, opts.dsn, nil
	}
	driver = cfg.DatabaseDriver
	if cmd.Flags().Changed("driver") {
		driver = opts.driver
	}
	if driver == "" {
		driver = migrations.SQLite
	}
	dsn = cfg.DatabaseDSN
	if dsn == "" && driver == migrations.SQLite && cfg.DataDir != "" {
		dsn = filepath.Join(cfg.DataDir, sqliteFileName)
	}
	if dsn == "" {
		return "", "", errors.New("--dsn is required, unless the config has database_dsn (or data_dir, for sqlite)")
	}
	return driver, dsn, nil
}

// progressPrinter prints a line for the first batch of each table, then at
// most once per every (0: after every batch).
func progressPrinter(out io.Writer, pass int, every time.Duration) func(sqldb.RotateProgress) {
	var table string
	var last time.Time
	return func(p sqldb.RotateProgress) {
		if p.Table == table && time.Since(last) < every {
			return
		}
		table, last = p.Table, time.Now()
		counts := p.RunInfos
		if p.Table == "operations" {
			counts = p.Operations
		}
		fmt.Fprintf(out, "pass %d: %s %s\n", pass, p.Table, describeCounts(counts))
	}
}

func describeProgress(p sqldb.RotateProgress) string {
	return "run_infos " + describeCounts(p.RunInfos) + "; operations " + describeCounts(p.Operations)
}

func describeCounts(c sqldb.RotateCounts) string {
	return fmt.Sprintf("%d seen, %d re-encrypted, %d skipped", c.Seen, c.Reencrypted, c.Skipped)
}
