// Package safefile is the one way dbxtop opens a file a user or a unit
// names (its config, the learned-limits state, token files, the web
// configuration, TLS files, log files) without letting it hang or swamp
// dbxtop: the open never blocks (a FIFO at the path would otherwise wait
// for a writer forever, deaf to SIGTERM), only a regular file is used,
// and never more than a cap is read. Read reads a file; Check checks one
// that another library reads itself; OpenAppend opens a log. Nothing
// else in dbxtop calls os.Open, os.OpenFile or os.ReadFile
// (archtest's TestFilesOpenThroughSafefile).
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Read returns the content of the regular file at path, at most max
// bytes. A missing file is an error that wraps fs.ErrNotExist. The file
// is opened without blocking and checked after the open (not by name, so
// nothing can be swapped in between); info is the opened file's.
func Read(path string, max int64) (data []byte, info fs.FileInfo, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err = f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, info, &NotRegularError{Kind: Kind(info.Mode())}
	}
	if info.Size() > max {
		return nil, info, &TooLargeError{Size: info.Size(), Max: max}
	}
	// The size may grow after the stat: read one byte past the cap to see.
	data, err = io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, info, err
	}
	if int64(len(data)) > max {
		return nil, info, &TooLargeError{Size: int64(len(data)), Max: max}
	}
	return data, info, nil
}

// Check opens path as Read does and checks it (a regular file of at
// most max bytes) without reading it: for a file that another library
// then reads itself (a TLS certificate, the web configuration, the SDK's
// config file). A missing file is an error that wraps fs.ErrNotExist.
func Check(path string, max int64) (fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return info, &NotRegularError{Kind: Kind(info.Mode())}
	}
	if info.Size() > max {
		return info, &TooLargeError{Size: info.Size(), Max: max}
	}
	return info, nil
}

// OpenAppend opens the regular file at path for appending, creating it
// with perm: a log. The open never blocks (a FIFO without a reader is
// refused at once rather than waited on), and anything but a regular
// file is refused, checked on the opened file.
func OpenAppend(path string, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, perm)
	if err != nil {
		// A FIFO without a reader fails with ENXIO: say what it is.
		if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() {
			return nil, &NotRegularError{Kind: Kind(st.Mode()), Append: true}
		}
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Kind: Kind(info.Mode()), Append: true}
	}
	return f, nil
}

// NotRegularError is a path that is not a regular file; Append says it
// was to be appended to (a log), not read.
type NotRegularError struct {
	Kind   string
	Append bool
}

func (e *NotRegularError) Error() string {
	if e.Append {
		return "not a regular file (" + e.Kind + "); dbxtop appends only to regular files"
	}
	return "not a regular file (" + e.Kind + "); dbxtop reads only regular files"
}

// TooLargeError is a file over its cap.
type TooLargeError struct{ Size, Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%d bytes or more, over the %d-byte cap", e.Size, e.Max)
}

// IsRefused reports whether err is one of Read's own refusals (as
// opposed to the operating system's).
func IsRefused(err error) bool {
	var nr *NotRegularError
	var tl *TooLargeError
	return errors.As(err, &nr) || errors.As(err, &tl)
}

// Kind names a file mode's type for a message: "a named pipe".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// WritableByOthers reports whether users other than the owner may write
// the file (group or world write bit), as ssh checks its config.
func WritableByOthers(info fs.FileInfo) bool {
	return info != nil && info.Mode().Perm()&0o022 != 0
}

// OpenToOthers reports whether users other than the owner may read or
// write the file (any group or world bit), the test ssh applies to a
// private key: a token file that fails it gets a warning.
func OpenToOthers(info fs.FileInfo) bool {
	return info != nil && info.Mode().Perm()&0o077 != 0
}

// WriteAtomic replaces path with data, mode perm: through a temporary
// file in the same directory, synced, then renamed over path, so a reader
// never sees half a file and a file with looser permissions is replaced,
// not reused. The directory must exist.
func WriteAtomic(path string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // nothing to remove after the rename
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(name, path)
}
