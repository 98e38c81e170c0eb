package notices

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	apache, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		string(apache): "Apache-2.0",
		"Copyright (c) 2020 A\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\nof this software":                              "MIT",
		"Redistribution and use in source and binary forms, with or\nwithout modification, are permitted provided ...\n* Neither the name of Google Inc. nor": "BSD-3-Clause",
		"> Redistribution and use in source and binary forms, with or without\n> modification, are permitted provided that":                                   "BSD-2-Clause",
		"Permission to use, copy, modify, and/or distribute this software for any\npurpose with or without fee is hereby granted":                             "ISC",
		"Mozilla Public License Version 2.0\n==================================":                                                                              "MPL-2.0",
		"GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007":                                                                                                 "",
		"": "",
	}
	for text, want := range cases {
		if got := Classify(text); got != want {
			t.Errorf("Classify(%.40q) = %q, want %q", text, got, want)
		}
	}
}

func TestCheckNamesEveryModuleThatCannotShip(t *testing.T) {
	mods := []Module{
		{Path: "ok.example/a", Version: "v1.0.0", Files: []File{{Name: "LICENSE"}}, License: "MIT"},
		{Path: "none.example/b", Version: "v1.0.0"},
		{Path: "gpl.example/c", Version: "v1.0.0", Files: []File{{Name: "COPYING"}}, License: "GPL-3.0"},
		{Path: "odd.example/d", Version: "v1.0.0", Files: []File{{Name: "LICENSE.md"}}},
	}
	err := Check(mods)
	if err == nil {
		t.Fatal("Check passed modules without an allowed licence")
	}
	for _, want := range []string{"none.example/b@v1.0.0: no licence file", "gpl.example/c@v1.0.0: licence GPL-3.0 is not in the allow-list", "odd.example/d@v1.0.0: licence not recognised"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "ok.example") {
		t.Errorf("Check blamed an allowed module:\n%v", err)
	}
	if err := Check(mods[:1]); err != nil {
		t.Errorf("Check(allowed only) = %v", err)
	}
}

func TestLicenseFilesTakesLicenceAndNoticeTextsOnly(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"LICENSE":   "Permission is hereby granted, free of charge, to any person obtaining a copy",
		"NOTICE":    "Example\nCopyright 2020",
		"README.md": "not a licence",
		"main.go":   "package main",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := licenseFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(files); got != "LICENSE, NOTICE" {
		t.Errorf("licence files = %s, want LICENSE, NOTICE", got)
	}
	if got := licenseOf(files); got != "MIT" {
		t.Errorf("licence = %q, want MIT", got)
	}
}

// The release's modules: every linked module has an allowed licence, and
// the notices carry the modules the binary is known to link.
func TestReleaseModulesHaveAllowedLicences(t *testing.T) {
	mods, err := Linked(context.Background(), "../..", ReleaseTargets)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(mods); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, mods); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"github.com/spf13/cobra ",
		"github.com/databricks/databricks-sdk-go ",
		"github.com/inconshreveable/mousetrap ", // windows only: the union of targets
	} {
		if !strings.Contains(buf.String(), "\n  "+want) {
			t.Errorf("the notices' index lacks %s", want)
		}
	}
	for _, m := range mods {
		if m.Path == "github.com/dbxtop/dbxtop" {
			t.Error("the notices list dbxtop itself")
		}
	}
}
