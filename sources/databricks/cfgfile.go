package databricks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dbxtop/dbxtop/internal/safefile"
)

// MaxConfigFile bounds the ~/.databrickscfg dbxtop lets the SDK read. A
// real file holds a few profiles (a few KiB); 256 KiB is thousands of
// them. The SDK reads and parses the file without a limit, so a link to
// /dev/zero or a FIFO would hang dbxtop or run the machine out of memory
// before any deadline applies.
const MaxConfigFile = 256 << 10

// maxProfilesShown bounds the profile names an error lists.
const maxProfilesShown = 5

// configFilePath is the file unified auth would read: Config.ConfigFile,
// else DATABRICKS_CONFIG_FILE, else ~/.databrickscfg ("~" expanded).
func configFilePath(c Config) (path, shown string) {
	path = c.ConfigFile
	if path == "" {
		path = os.Getenv("DATABRICKS_CONFIG_FILE")
	}
	if path == "" {
		path = "~/.databrickscfg"
	}
	shown = path
	if strings.HasPrefix(path, "~") {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, path[1:])
		}
	}
	return path, shown
}

// checkConfigFile lets the SDK read the config file only when it is a
// regular file of at most MaxConfigFile bytes. A missing file is fine (the
// SDK then ignores it; checkProfile reports it when a profile was asked
// for). The open is non-blocking, so a FIFO cannot stall it, and the
// checks are made on the opened file, not on the name.
func checkConfigFile(c Config) error {
	path, shown := configFilePath(c)
	_, err := safefile.Check(path, MaxConfigFile)
	var nr *safefile.NotRegularError
	var tl *safefile.TooLargeError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.As(err, &nr):
		return fmt.Errorf("config file %s is not a regular file (%s); dbxtop reads only regular files", shown, nr.Kind)
	case errors.As(err, &tl):
		return fmt.Errorf("config file %s is %d bytes; dbxtop reads at most %d (a real one holds a few profiles)", shown, tl.Size, MaxConfigFile)
	case err != nil:
		return fmt.Errorf("config file %s: %w", shown, unwrapPath(err))
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// resolveBounded runs fn (the SDK's configuration resolution, which
// cannot be interrupted) but returns when ctx ends: SIGTERM and --timeout
// apply to it as to everything else. The bounded config file keeps fn
// itself short; this is the second guard.
func resolveBounded(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("resolving the databricks configuration: %w", context.Cause(ctx))
	}
}

// profileList names at most maxProfilesShown profiles, then how many more.
func profileList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= maxProfilesShown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxProfilesShown], ", "), len(names)-maxProfilesShown)
}
