package main

import "github.com/spf13/cobra"

func newMCPImportCmd() *cobra.Command { return &cobra.Command{Use: "import FILE", Hidden: true} }
