// Package notices builds the third-party notices of dbxtop's release
// archives from the modules actually linked into the binary, and checks
// each one's licence against the project's allow-list (docs/releasing.md).
//
// The linked modules are what `go list -deps` says the main package needs
// on each release target (GOOS/GOARCH, CGO_ENABLED=0); their texts come
// from the module cache, so nothing beyond the Go module proxy is asked.
// It imports internal/safefile only.
package notices

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/dbxtop/dbxtop/internal/safefile"
)

// Allowed is the allow-list: SPDX identifiers of licences whose terms a
// binary distribution meets by carrying the texts (MPL-2.0 also asks that
// its files' source stay available, which the module proxy does).
var Allowed = map[string]bool{
	"Apache-2.0":   true,
	"MIT":          true,
	"BSD-2-Clause": true,
	"BSD-3-Clause": true,
	"ISC":          true,
	"MPL-2.0":      true,
}

// Target is one release target.
type Target struct{ GOOS, GOARCH string }

// ReleaseTargets are .goreleaser.yaml's builds.
var ReleaseTargets = []Target{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// Module is one linked module and its licence files.
type Module struct {
	Path, Version string
	Dir           string // in the module cache
	Files         []File // licence and NOTICE files at the module's root
	License       string // SPDX id of its licence ("" when unrecognised)
}

// File is one licence or NOTICE text.
type File struct {
	Name string
	Text string
}

// Linked lists the modules the package main (a directory, "." for the
// module's root) links on any of the targets, sorted by path, without the
// main module itself. Each carries its licence files.
func Linked(ctx context.Context, main string, targets []Target) ([]Module, error) {
	seen := map[string]Module{}
	for _, t := range targets {
		cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f",
			"{{with .Module}}{{if not .Main}}{{with .Replace}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{else}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}{{end}}", ".")
		cmd.Dir = main
		cmd.Env = append(os.Environ(), "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "CGO_ENABLED=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list -deps for %s/%s: %w: %s", t.GOOS, t.GOARCH, err, strings.TrimSpace(stderr.String()))
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			if len(f) != 3 || f[0] == "" {
				continue
			}
			if _, ok := seen[f[0]]; ok {
				continue
			}
			seen[f[0]] = Module{Path: f[0], Version: f[1], Dir: f[2]}
		}
	}
	mods := make([]Module, 0, len(seen))
	for _, m := range seen {
		if m.Dir == "" {
			return nil, fmt.Errorf("module %s@%s is not in the module cache: run go mod download", m.Path, m.Version)
		}
		files, err := licenseFiles(m.Dir)
		if err != nil {
			return nil, fmt.Errorf("module %s@%s: %w", m.Path, m.Version, err)
		}
		m.Files = files
		m.License = licenseOf(files)
		if d, ok := Declared[m.Path+"@"+m.Version]; ok && len(files) == 0 {
			if m.Files, err = declaredFiles(m.Dir, d); err != nil {
				return nil, fmt.Errorf("module %s@%s: %w", m.Path, m.Version, err)
			}
			m.License = d.License
		}
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

// GoRuntime is the Go distribution's own licence: the standard library
// and runtime are linked into every binary.
func GoRuntime(ctx context.Context) (Module, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return Module{}, fmt.Errorf("go env GOROOT GOVERSION: %w", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return Module{}, fmt.Errorf("go env GOROOT GOVERSION said %q", out)
	}
	root, version := f[0], f[1]
	files, err := licenseFiles(root)
	if err != nil {
		return Module{}, fmt.Errorf("the Go distribution at %s: %w", root, err)
	}
	return Module{Path: "Go standard library and runtime", Version: version, Dir: root, Files: files, License: licenseOf(files)}, nil
}

// Declaration is a licence a module states outside a licence file.
type Declaration struct {
	License string // SPDX id
	From    string // the file at the module's root that states it
}

// Declared lists, by path@version (an update is reviewed again), the
// modules that ship no licence file but state their licence elsewhere;
// their notice is that file, whole.
var Declared = map[string]Declaration{
	// Windows builds only (bubbletea's key_windows.go). Its README's
	// "License" section says MIT and names the author.
	"github.com/mattn/go-localereader@v0.0.1": {License: "MIT", From: "README.md"},
}

func declaredFiles(dir string, d Declaration) ([]File, error) {
	b, err := readCapped(filepath.Join(dir, d.From))
	if err != nil {
		return nil, err
	}
	if !strings.Contains(string(b), d.License) {
		return nil, fmt.Errorf("%s no longer says %s: review its licence (internal/notices.Declared)", d.From, d.License)
	}
	return []File{{Name: d.From + " (the module ships no licence file; this file states " + d.License + ")", Text: string(b)}}, nil
}

// licenceName matches the files a module's licence terms live in.
var licenceName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|unlicense)([-._].*)?$`)

// maxLicenseFile bounds one text: a licence is pages, not megabytes.
const maxLicenseFile = 1 << 20

func licenseFiles(dir string) ([]File, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, e := range ents {
		if !e.Type().IsRegular() || !licenceName.MatchString(e.Name()) {
			continue
		}
		b, err := readCapped(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: e.Name(), Text: string(b)})
	}
	return files, nil
}

// readCapped reads one licence text through safefile (regular files
// only, never blocking, capped).
func readCapped(p string) ([]byte, error) {
	b, _, err := safefile.Read(p, maxLicenseFile)
	return b, err
}

// licenseOf is the licence of a module's files: the first recognised
// licence file's (NOTICE files accompany a licence, they are not one).
func licenseOf(files []File) string {
	for _, f := range files {
		if strings.HasPrefix(strings.ToUpper(f.Name), "NOTICE") {
			continue
		}
		if id := Classify(f.Text); id != "" {
			return id
		}
	}
	return ""
}

var quoteMark = regexp.MustCompile(`(?m)^[ \t]*>`)

// Classify names a licence text by its SPDX identifier from phrases only
// that licence carries; "" when it recognises none.
func Classify(text string) string {
	// One space between words (line breaks differ), Markdown quote marks
	// dropped (some projects quote their licence in a .md file).
	t := strings.Join(strings.Fields(quoteMark.ReplaceAllString(text, "")), " ")
	has := func(s string) bool { return strings.Contains(t, s) }
	switch {
	case has("Apache License") && has("Version 2.0"):
		return "Apache-2.0"
	case has("Mozilla Public License Version 2.0") || has("Mozilla Public License, version 2.0"):
		return "MPL-2.0"
	case has("Permission is hereby granted, free of charge, to any person obtaining a copy"):
		return "MIT"
	case has("Permission to use, copy, modify, and/or distribute this software for any purpose with or without fee is hereby granted") ||
		has("Permission to use, copy, modify, and distribute this software for any purpose with or without fee is hereby granted"):
		return "ISC"
	case has("Redistribution and use in source and binary forms, with or without modification, are permitted"):
		if has("Neither the name") || has("names of its contributors may be used") || has("name of the copyright holder nor") {
			return "BSD-3-Clause"
		}
		return "BSD-2-Clause"
	}
	return ""
}

// Check returns one error naming every module whose licence is missing
// or not in Allowed.
func Check(mods []Module) error {
	var errs []error
	for _, m := range mods {
		switch {
		case len(m.Files) == 0:
			errs = append(errs, fmt.Errorf("%s@%s: no licence file at its root (%s)", m.Path, m.Version, m.Dir))
		case m.License == "":
			errs = append(errs, fmt.Errorf("%s@%s: licence not recognised (files: %s): read it and add its SPDX id to internal/notices if it may ship", m.Path, m.Version, names(m.Files)))
		case !Allowed[m.License]:
			errs = append(errs, fmt.Errorf("%s@%s: licence %s is not in the allow-list (internal/notices.Allowed)", m.Path, m.Version, m.License))
		}
	}
	return errors.Join(errs...)
}

func names(files []File) string {
	n := make([]string, len(files))
	for i, f := range files {
		n[i] = f.Name
	}
	return strings.Join(n, ", ")
}

// Write writes the notices file: a header, an index of every module with
// its version and licence, then each module's texts in full.
func Write(w io.Writer, mods []Module) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "dbxtop: third-party notices")
	fmt.Fprintln(bw, "")
	fmt.Fprintln(bw, "dbxtop is licensed under the Apache License, Version 2.0 (LICENSE).")
	fmt.Fprintln(bw, "Its binaries link the following software, distributed under the")
	fmt.Fprintln(bw, "licences below. This list is generated from the modules linked into")
	fmt.Fprintln(bw, "the release builds (`go run ./cmd/notices`); their source is at")
	fmt.Fprintln(bw, "https://proxy.golang.org and each project's own site.")
	fmt.Fprintln(bw, "")
	for _, m := range mods {
		fmt.Fprintf(bw, "  %s %s (%s)\n", m.Path, m.Version, m.License)
	}
	for _, m := range mods {
		fmt.Fprintf(bw, "\n%s\n%s %s\n%s\n", strings.Repeat("=", 72), m.Path, m.Version, strings.Repeat("=", 72))
		for _, f := range m.Files {
			fmt.Fprintf(bw, "\n--- %s ---\n\n%s", f.Name, f.Text)
			if !strings.HasSuffix(f.Text, "\n") {
				fmt.Fprintln(bw)
			}
		}
	}
	return bw.Flush()
}
