package safefile

import (
	"errors"
	"fmt"
	"strings"
)

// MaxToken bounds a token file: a token is a line, not a document.
const MaxToken = 4096

// ReadToken reads a token from a file (a systemd credential, a secret
// mount, a file a discovery label names): one line, surrounding space
// trimmed, through Read (a FIFO or a device at the path is refused, never
// waited on). what names where the path came from (a flag, a variable, a
// label) for the errors, which name it and the file, never the content.
// warn is one line when others than the owner may read or write the
// file, as ssh warns of a private key; "" otherwise.
func ReadToken(path, what string) (tok, warn string, err error) {
	b, info, err := Read(path, MaxToken)
	var tl *TooLargeError
	switch {
	case errors.As(err, &tl):
		return "", "", fmt.Errorf("%s: %s is larger than %d bytes: not a token file", what, path, MaxToken)
	case IsRefused(err):
		return "", "", fmt.Errorf("%s: %s is %w", what, path, err)
	case err != nil:
		return "", "", fmt.Errorf("%s: %w", what, err)
	}
	tok = strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", "", fmt.Errorf("%s: %s is empty: put the token in it", what, path)
	case strings.ContainsAny(tok, "\r\n"):
		return "", "", fmt.Errorf("%s: %s holds more than one line: put only the token in it", what, path)
	}
	if OpenToOthers(info) {
		warn = fmt.Sprintf("%s: %s has mode %04o: users other than its owner may read or change the token; chmod 600 it", what, path, info.Mode().Perm())
	}
	return tok, warn, nil
}
