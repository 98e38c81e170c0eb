package targets

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dbxtop/dbxtop/textfmt"
)

// FuzzDecodeFileSD: a file_sd file is written by a generator or a person
// dbxtop does not control. Whatever it holds, decoding ends, and every
// target it yields is a base URL without credentials whose labels are
// clean lines.
func FuzzDecodeFileSD(f *testing.F) {
	f.Add([]byte(`[{"targets": ["127.0.0.2:8445"], "labels": {"host": "a", "__dbxtop_token_file__": "tok"}}]`), true)
	f.Add([]byte("- targets: ['127.0.0.2:8445']\n  labels: {__scheme__: https}\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		ts, err := decodeFileSD(data, isJSON, "/etc/dbxtop")
		if err != nil {
			if !utf8.ValidString(err.Error()) && isJSON {
				t.Errorf("error not UTF-8: %q", err)
			}
			return
		}
		for _, tg := range ts {
			if !strings.HasPrefix(tg.URL, "http://") && !strings.HasPrefix(tg.URL, "https://") || strings.Contains(tg.URL, "@") {
				t.Errorf("target URL %q: want http(s)://HOST:PORT", tg.URL)
			}
			for k, v := range tg.Labels {
				if strings.HasPrefix(k, "__") || textfmt.Line(v) != v {
					t.Errorf("label %q=%q passed on uncleaned", k, v)
				}
			}
		}
	})
}
