package config

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/dbxtop/dbxtop/internal/safefile"
)

// currentContextLine matches a top-level current_context assignment.
var currentContextLine = regexp.MustCompile(`^\s*current_context\s*=`)

// tableHeader matches the first line of a table ([x] or [[x]]).
var tableHeader = regexp.MustCompile(`^\s*\[`)

// SetCurrentContext makes name the file's current_context, the context
// used when no --context is given. The file at path must exist, be valid
// and define the context. Only the one line changes (or is added before
// the first table), so the operator's comments and layout stay; the file
// is replaced atomically with its permissions kept. A symbolic link (a
// config kept in a dotfiles repository) is followed: its target is
// edited and the link stays a link.
func SetCurrentContext(path, name string) error {
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("config file %s is a link that leads nowhere: %w", path, unwrapPathError(err))
		}
		if err := SetCurrentContext(target, name); err != nil {
			return fmt.Errorf("%w (the target of the link %s)", err, path)
		}
		return nil
	}
	f, err := Load(path, false)
	if err != nil {
		return err
	}
	if _, ok := f.Contexts[name]; !ok {
		return fmt.Errorf("config file %s: no context %q (%s)", path, name, knownContexts(f))
	}
	data, _, err := safefile.Read(path, MaxFileSize)
	if err != nil {
		return fmt.Errorf("config file %s: %w: %w", path, ErrUnreadable, unwrapPathError(err))
	}
	line := []byte("current_context = " + strconv.Quote(name))
	lines := bytes.SplitAfter(data, []byte("\n"))
	out := make([][]byte, 0, len(lines)+1)
	done := false
	for _, l := range lines {
		if !done && tableHeader.Match(l) {
			out = append(out, append(append([]byte{}, line...), '\n'))
			done = true
		}
		if !done && currentContextLine.Match(l) {
			nl := []byte{}
			if bytes.HasSuffix(l, []byte("\n")) {
				nl = []byte("\n")
			}
			out = append(out, append(append([]byte{}, line...), nl...))
			done = true
			continue
		}
		out = append(out, l)
	}
	if !done {
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			out = append(out, []byte("\n"))
		}
		out = append(out, append(line, '\n'))
	}
	edited := bytes.Join(out, nil)
	if _, err := Parse(edited); err != nil {
		return fmt.Errorf("config file %s: the edit would not parse (left unchanged): %w", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := safefile.WriteAtomic(path, edited, st.Mode().Perm()); err != nil {
		return fmt.Errorf("config file %s: cannot replace it: %w", path, err)
	}
	return nil
}
