// Command cmd writes the shapes this checkout's code writes (compat.Shapes) into a folder, one
// file each (-out), or reads another release's shapes from one (-check) with this checkout's
// decoders, failing when one reads differently from this checkout's own. make compat-fixtures
// runs both on an earlier release's code: its shapes are kept in infra/compat/testdata/<release>/,
// and it reads the shapes of the checkout that runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/resetnotify/resetnotify/infra/compat"
)

func main() {
	out := flag.String("out", "", "folder to write the shapes into")
	check := flag.String("check", "", "folder of another release's shapes to read")
	flag.Parse()
	shapes, err := compat.Shapes()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	switch {
	case *check != "":
		if err := checkShapes(*check, shapes); err != nil {
			fmt.Fprintln(os.Stderr, "compat:", err)
			os.Exit(1)
		}
		return
	case *out == "":
		fmt.Fprintln(os.Stderr, "compat: -out or -check is required")
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, raw := range shapes {
		if err := os.WriteFile(filepath.Join(*out, name), append(raw, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// checkShapes reads the shapes in dir and compares them with own's.
func checkShapes(dir string, own map[string][]byte) error {
	theirs := map[string][]byte{}
	for name := range own {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		theirs[name] = raw
	}
	got, err := compat.Read(theirs)
	if err != nil {
		return fmt.Errorf("the shapes in %s do not read here: %w", dir, err)
	}
	want, err := compat.Read(own)
	if err != nil {
		return err
	}
	if diff := compat.Differences(got, want); len(diff) > 0 {
		return fmt.Errorf("the shapes in %s read differently here:\n%s", dir, strings.Join(diff, "\n"))
	}
	return nil
}
