package targets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/dbxtop/dbxtop/internal/safefile"
	"github.com/dbxtop/dbxtop/textfmt"
)

// fileSource is file://PATH: a Prometheus file_sd file, re-read when its
// size, modification time or inode changed (a generator's rename over
// it is a new file), so an unchanged file costs one stat per call.
type fileSource struct {
	spec, path string
	max        int

	mu    sync.Mutex
	stamp stamp
	last  []Target
	err   error
}

// stamp is the file last read: changed when another file is at the
// path (os.SameFile) or its size or modification time differs.
type stamp struct{ info fs.FileInfo }

func (s stamp) same(info fs.FileInfo) bool {
	return s.info != nil && os.SameFile(s.info, info) && s.info.Size() == info.Size() && s.info.ModTime().Equal(info.ModTime())
}

func (s *fileSource) String() string { return s.spec }

func (s *fileSource) Targets(context.Context) ([]Target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info, err := safefile.Check(s.path, MaxFile)
	if err == nil && s.stamp.same(info) {
		return s.last, s.err
	}
	var data []byte
	if err == nil {
		data, info, err = safefile.Read(s.path, MaxFile)
	}
	if err != nil {
		// Not remembered as read: the next call tries again.
		s.stamp = stamp{}
		return s.last, fmt.Errorf("%s: %w", show(s.spec), err)
	}
	ts, err := decodeFileSD(data, strings.HasSuffix(strings.ToLower(s.path), ".json"), filepath.Dir(s.path))
	s.stamp = stamp{info}
	if err != nil {
		s.err = fmt.Errorf("%s: %w (the last good list is kept)", show(s.spec), err)
		return s.last, s.err
	}
	ts, s.err = finish(ts, s.max, s.spec)
	s.last = ts
	return ts, s.err
}

// group is one element of a file_sd file.
type group struct {
	Targets []string          `json:"targets" yaml:"targets"`
	Labels  map[string]string `json:"labels" yaml:"labels"`
}

// Bounds of one file_sd entry.
const (
	maxLabels     = 64
	maxLabelValue = 1024
)

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,127}$`)

// decodeFileSD parses a file_sd file (JSON, or YAML when !isJSON) into
// targets: each "HOST:PORT" (or http(s)://HOST:PORT) of each group with
// the group's labels; a relative token file is taken relative to dir.
// It refuses a label that would carry a token rather than name its file.
func decodeFileSD(data []byte, isJSON bool, dir string) ([]Target, error) {
	var groups []group
	if isJSON {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&groups); err != nil {
			return nil, fmt.Errorf("not a file_sd JSON list of {\"targets\": [...], \"labels\": {...}}: %w", err)
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&groups); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("not a file_sd YAML list of {targets: [...], labels: {...}}: %s", oneLine(err.Error()))
		}
	}
	var out []Target
	for i, g := range groups {
		t, err := groupTarget(g, dir)
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", i+1, err)
		}
		for _, hp := range g.Targets {
			u, err := targetURL(t.scheme, hp)
			if err != nil {
				return nil, fmt.Errorf("group %d: target %q: %w", i+1, clip(hp), err)
			}
			out = append(out, Target{URL: u, Labels: t.labels, TokenFile: t.tokenFile})
		}
	}
	return out, nil
}

type groupInfo struct {
	scheme, tokenFile string
	labels            map[string]string
}

func groupTarget(g group, dir string) (groupInfo, error) {
	gi := groupInfo{scheme: "http"}
	if len(g.Labels) > maxLabels {
		return gi, fmt.Errorf("%d labels, over the cap of %d", len(g.Labels), maxLabels)
	}
	for k, v := range g.Labels {
		if !labelName.MatchString(k) {
			return gi, fmt.Errorf("label name %q: want [a-zA-Z_][a-zA-Z0-9_]*", clip(k))
		}
		if len(v) > maxLabelValue || !utf8.ValidString(v) {
			return gi, fmt.Errorf("label %s: over %d bytes or not UTF-8", k, maxLabelValue)
		}
		switch {
		case k == LabelTokenFile:
			if v == "" || strings.ContainsAny(v, "\x00\r\n") {
				return gi, fmt.Errorf("label %s: want a file's path", k)
			}
			if !filepath.IsAbs(v) {
				v = filepath.Join(dir, v)
			}
			gi.tokenFile = v
		case k == LabelScheme:
			if v != "http" && v != "https" {
				return gi, fmt.Errorf("label %s=%q: want http or https", k, clip(v))
			}
			gi.scheme = v
		case strings.Contains(strings.ToLower(k), "token"):
			// file_sd files are often generated and world-readable.
			return gi, fmt.Errorf("label %s: a token never goes in a file_sd file: put it in a file readable by its owner only and name that file with %s", k, LabelTokenFile)
		case strings.HasPrefix(k, "__"):
		default:
			if gi.labels == nil {
				gi.labels = map[string]string{}
			}
			gi.labels[k] = textfmt.Line(v)
		}
	}
	return gi, nil
}

// targetURL is the base URL of a file_sd target: HOST:PORT with the
// group's scheme, or a whole http(s)://HOST:PORT.
func targetURL(scheme, hp string) (string, error) {
	if s, rest, ok := strings.Cut(hp, "://"); ok {
		s = strings.ToLower(s)
		if s != "http" && s != "https" {
			return "", errors.New("want HOST:PORT or http(s)://HOST:PORT")
		}
		return baseURL(s, rest)
	}
	if _, _, err := splitHostPort(hp); err != nil {
		return "", err
	}
	return baseURL(scheme, hp)
}

// oneLine keeps a decoder's message to one clean line.
func oneLine(s string) string { return clip(textfmt.Line(s)) }
