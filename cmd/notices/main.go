// Command notices writes the third-party notices of dbxtop's release
// archives, generated from the modules linked into the binary on every
// release target, and fails when a linked module's licence is missing or
// not in the allow-list (internal/notices): `go run ./cmd/notices -o FILE`,
// or `-check` to check only. Release builds and CI run it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/dbxtop/dbxtop/internal/notices"
)

func main() {
	out := flag.String("o", "THIRD_PARTY_NOTICES", "the notices file to write")
	check := flag.Bool("check", false, "only check the licences; write nothing")
	flag.Parse()
	if err := run(context.Background(), *out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "notices:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string, check bool) error {
	mods, err := notices.Linked(ctx, ".", notices.ReleaseTargets)
	if err != nil {
		return err
	}
	goMod, err := notices.GoRuntime(ctx)
	if err != nil {
		return err
	}
	mods = append([]notices.Module{goMod}, mods...)
	if err := notices.Check(mods); err != nil {
		return fmt.Errorf("linked modules whose licence cannot ship:\n%w", err)
	}
	if check {
		fmt.Printf("notices: %d linked modules, every licence allowed\n", len(mods))
		return nil
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := notices.Write(f, mods); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
