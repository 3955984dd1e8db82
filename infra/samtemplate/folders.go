package samtemplate

import (
	"fmt"
	"os"
	"regexp"
)

// buildLine is one of the Makefile's build-<LogicalId> lines, which name the folder SAM's
// `BuildMethod: makefile` builds for that function.
var buildLine = regexp.MustCompile(`(?m)^build-(\w+):\s+FUNCTION_DIR\s*:=\s*(\S+)\s*$`)

// FunctionFolders reads the Makefile at path and returns each function's folder by logical ID
// (IntakeFunction -> functions/intake). The Makefile is the one place that maps the two, for
// `sam build` and for the local stack alike; a logical ID listed twice is an error.
func FunctionFolders(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	for _, m := range buildLine.FindAllSubmatch(raw, -1) {
		id, dir := string(m[1]), string(m[2])
		if _, dup := dirs[id]; dup {
			return nil, fmt.Errorf("%s lists build-%s twice", path, id)
		}
		dirs[id] = dir
	}
	return dirs, nil
}
