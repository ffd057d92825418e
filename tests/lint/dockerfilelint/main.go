// dockerfilelint FILE: BuildKit's Dockerfile checks (the rules of `docker build --check`:
// casing, stage names, JSON arguments, deprecated and legacy forms) on FILE, without a
// container engine. Prints each warning as FILE:LINE: RULE: message and exits 1 if there is one.
package main

import (
	"fmt"
	"os"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerfilelint FILE")
		os.Exit(2)
	}
	path := os.Args[1]
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	result, err := parser.Parse(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		os.Exit(2)
	}
	warnings := 0
	warn := func(rule, _, _, msg string, location []parser.Range) {
		line := 0
		if len(location) > 0 {
			line = location[0].Start.Line
		}
		fmt.Printf("%s:%d: %s: %s\n", path, line, rule, msg)
		warnings++
	}
	for _, w := range result.Warnings {
		fmt.Printf("%s:%d: parser: %s\n", path, w.Location.Start.Line, w.Short)
		warnings++
	}
	lint := linter.New(&linter.Config{Warn: warn})
	stages, _, err := instructions.Parse(result.AST, lint)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		os.Exit(2)
	}
	if len(stages) == 0 {
		fmt.Fprintf(os.Stderr, "%s: no stage\n", path)
		os.Exit(2)
	}
	if warnings > 0 {
		os.Exit(1)
	}
	fmt.Printf("%s: %d stages, no warning\n", path, len(stages))
}
