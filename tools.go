//go:build tools

package main

import (
	_ "github.com/apache/thrift/lib/go/thrift"
	_ "github.com/cenkalti/backoff/v5"
	_ "github.com/charmbracelet/bubbles/key"
	_ "github.com/charmbracelet/bubbletea"
	_ "github.com/charmbracelet/lipgloss"
	_ "github.com/charmbracelet/x/exp/teatest"
	_ "github.com/databricks/databricks-sdk-go"
	_ "github.com/spf13/cobra"
	_ "go.uber.org/goleak"
	_ "golang.org/x/time/rate"
	_ "pgregory.net/rapid"
)
