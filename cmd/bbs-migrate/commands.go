package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/spf13/cobra"
)

type options struct {
	driver string
	dsn    string
}

func newRootCommand() *cobra.Command {
	opts := &options{}
	root := &cobra.Command{
		Use:           "bbs-migrate",
		Short:         "Inspect and migrate a Corkboard database",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&opts.driver, "driver", "sqlite", "database driver: sqlite, postgres or mysql")
	root.PersistentFlags().StringVar(&opts.dsn, "dsn", "", "database to migrate: a file path for sqlite, a driver DSN otherwise (required)")
	root.AddCommand(statusCommand(opts), upCommand(opts), planCommand(opts), validateCommand(opts), rotateKeysCommand(opts))
	return root
}

func statusCommand(opts *options) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "List every migration with its checksum and whether it is applied, pending, dirty or modified",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runner, done, err := opts.open(cmd.Context(), cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			defer done()
			st, err := runner.Status(cmd.Context())
			if err != nil {
				return err
			}
			printStatus(cmd, st)
			return nil
		},
	}
}

func printStatus(cmd *cobra.Command, st *migrations.Status) {
	out := cmd.OutOrStdout()
	state := "clean"
	if st.Dirty {
		state = "DIRTY"
	}
	fmt.Fprintf(out, "%s database at version %04d of %04d, %s, %d pending\n", st.Dialect, st.Current, st.Latest, state, len(st.Pending()))
	if modified := modifiedMigrations(st); len(modified) > 0 {
		fmt.Fprintf(out, "applied differently from this binary's migrations: %s (validate fails; see the table)\n", strings.Join(modified, ", "))
	}
	if len(st.Unknown) > 0 {
		// Said up front, not only in the table's last rows: this binary's
		// bbs refuses such a database.
		fmt.Fprintf(out, "migrated by a newer corkboard than this binary (migrations unknown to it: %d): a bbs of this version refuses the database; upgrade\n", len(st.Unknown))
	}
	if st.Classic {
		fmt.Fprintln(out, "a classic BBS schema is waiting to be imported: `up` moves it aside and imports it")
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tNAME\tSTATE\tAPPLIED AT\tCHECKSUM")
	for _, m := range st.Migrations {
		status, at := "pending", "-"
		if m.Applied {
			status, at = "applied", m.AppliedAt.Format(time.RFC3339)
			switch {
			case m.Dirty:
				status = "dirty"
			case m.Modified():
				status = fmt.Sprintf("modified (applied as %s, checksum %s)", m.AppliedName, m.AppliedChecksum)
			}
		}
		fmt.Fprintf(w, "%04d\t%s\t%s\t%s\t%s\n", m.Version, m.Name, status, at, m.Checksum)
	}
	for _, a := range st.Unknown {
		state := "unknown to this binary"
		if a.Dirty {
			state += ", dirty"
		}
		fmt.Fprintf(w, "%04d\t%s\t%s\t%s\t%s\n", a.Version, a.Name, state, a.AppliedAt.Format(time.RFC3339), a.Checksum)
	}
	w.Flush()
}

func upCommand(opts *options) *cobra.Command {
	var up migrations.UpOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Apply pending migrations, up to --target when given",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runner, done, err := opts.open(cmd.Context(), cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			defer done()
			applied, err := runner.Up(cmd.Context(), up)
			for _, m := range applied {
				fmt.Fprintf(cmd.OutOrStdout(), "applied %s\n", m.ID())
			}
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to do: the database is up to date")
			}
			// Up applies what is pending; what was applied differently
			// stays so, and is said rather than passed over.
			if st, err := runner.Status(cmd.Context()); err == nil {
				if modified := modifiedMigrations(st); len(modified) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: applied differently from this binary's migrations: %s (bbs-migrate validate)\n", strings.Join(modified, ", "))
				}
			}
			return nil
		},
	}
	addUpFlags(cmd, &up)
	return cmd
}

func planCommand(opts *options) *cobra.Command {
	var up migrations.UpOptions
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Print the SQL that up would run; changes nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runner, done, err := opts.open(cmd.Context(), cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			defer done()
			preview, err := runner.Preview(cmd.Context(), up)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), preview.SQL())
			return nil
		},
	}
	addUpFlags(cmd, &up)
	return cmd
}

func addUpFlags(cmd *cobra.Command, up *migrations.UpOptions) {
	cmd.Flags().IntVar(&up.Target, "target", 0, "stop after this version (default: the latest)")
	cmd.Flags().BoolVar(&up.RetryDirty, "retry-dirty", false,
		"re-run the migration a dirty database is stuck on (after fixing what made it fail)")
}

func validateCommand(opts *options) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Exit non-zero when migrations are pending, dirty, unknown, or applied with another checksum",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runner, done, err := opts.open(cmd.Context(), cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			defer done()
			if err := runner.Validate(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: the database is at version %04d and matches this binary\n", runner.Latest())
			return nil
		},
	}
}

// open connects to the database. Only up may create a SQLite file: the
// other commands change nothing, and a new empty file would be a change, so
// for them a missing file is read as the empty database it would be.
func (o *options) open(ctx context.Context, stderr io.Writer, create bool) (*migrations.Runner, func(), error) {
	if o.dsn == "" {
		return nil, nil, errors.New("--dsn is required (a file path for sqlite, a driver DSN for postgres and mysql)")
	}
	dsn := o.dsn
	if o.driver == migrations.SQLite && !create {
		if _, err := os.Stat(dsn); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "no sqlite database at %s yet: showing an empty one (`up` creates it)\n", dsn)
			dsn = "file::memory:"
		}
	}
	conn, err := sqldb.Open(ctx, o.driver, dsn)
	if err != nil {
		return nil, nil, err
	}
	runner, err := migrations.NewRunner(conn, o.driver)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return runner, func() { conn.Close() }, nil
}

// modifiedMigrations names the applied migrations whose name or checksum
// differs from this binary's.
func modifiedMigrations(st *migrations.Status) []string {
	var ids []string
	for _, m := range st.Migrations {
		if m.Applied && !m.Dirty && m.Modified() {
			ids = append(ids, m.ID())
		}
	}
	return ids
}
