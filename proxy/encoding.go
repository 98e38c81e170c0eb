package proxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strings"
)

// decodeBody gives the plain bytes of (a prefix of) an answer body for
// observation, at most limit of them: as they are without
// Content-Encoding, decompressed for gzip and deflate (zlib-wrapped or
// raw, both seen in the wild). A prefix decompresses as far as it goes.
// false: an encoding the proxy cannot read (the body is still forwarded
// as received; only observation is lost).
func decodeBody(h http.Header, b []byte, limit int) ([]byte, bool) {
	enc := strings.ToLower(strings.TrimSpace(h.Get("Content-Encoding")))
	var r io.Reader
	switch enc {
	case "", "identity":
		return b, true
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, false
		}
		r = zr
	case "deflate":
		if zr, err := zlib.NewReader(bytes.NewReader(b)); err == nil {
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(b))
		}
	default:
		return nil, false
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)))
	if len(out) == 0 && err != nil {
		return nil, false
	}
	return out, true
}
