// Command smsprotect writes the country allow-list into template.yaml: the AllowedCountries
// parameter's default (what intake admits) and SmsProtectConfiguration's SMS country rules
// (what End User Messaging sends to), ALLOW for each listed country and BLOCK for every other
// country the phone-number metadata knows. CloudFormation cannot compute "every country but
// these" from a parameter, so the rules are written out here and a test keeps the two equal.
//
//	go run ./infra/smsprotect                 # rewrite the rules from the default in template.yaml
//	go run ./infra/smsprotect -countries US,CA,GB   # change the list: the default and the rules
//	go run ./infra/smsprotect -check          # exit 1 if template.yaml is not what it would write
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/resetnotify/resetnotify/shared/phoneregion"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "smsprotect:", err)
		os.Exit(1)
	}
}

// run parses the flags and rewrites (or checks) the template.
func run(args []string) error {
	fs := flag.NewFlagSet("smsprotect", flag.ContinueOnError)
	path := fs.String("template", "template.yaml", "the SAM template to rewrite")
	list := fs.String("countries", "", "the new allow-list, ISO 3166-1 alpha-2, comma-separated (default: the template's AllowedCountries default)")
	check := fs.Bool("check", false, "only report whether the template is up to date")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw, err := os.ReadFile(*path)
	if err != nil {
		return err
	}
	var countries []string
	if *list != "" {
		countries = strings.Split(*list, ",")
	}
	out, err := Rewrite(raw, countries)
	if err != nil {
		return err
	}
	if *check {
		if !bytes.Equal(raw, out) {
			return fmt.Errorf("%s: AllowedCountries and SmsProtectConfiguration differ; run go run ./infra/smsprotect", *path)
		}
		return nil
	}
	return os.WriteFile(*path, out, 0o644)
}

// The places Rewrite writes: the parameter's default line, and the rule lines between the
// markers.
var (
	defaultLine = regexp.MustCompile(`(?m)^(  AllowedCountries:\n    Type: String\n    Default: )"?([A-Za-z,]*)"?$`)
	rulesBlock  = regexp.MustCompile(`(?ms)^( +)# BEGIN country rules[^\n]*\n.*?^ +# END country rules[^\n]*$`)
)

// Rewrite returns template with the AllowedCountries default set to countries (nil: keep the
// default it has) and SmsProtectConfiguration's rules written from it.
func Rewrite(template []byte, countries []string) ([]byte, error) {
	m := defaultLine.FindSubmatch(template)
	if m == nil {
		return nil, errors.New("smsprotect: no AllowedCountries parameter with a Default line")
	}
	if countries == nil {
		countries = strings.Split(string(m[2]), ",")
	}
	allowed, err := normalise(countries)
	if err != nil {
		return nil, err
	}
	out := defaultLine.ReplaceAll(template, []byte(`${1}"`+strings.Join(allowed, ",")+`"`))
	loc := rulesBlock.FindSubmatchIndex(out)
	if loc == nil {
		return nil, errors.New("smsprotect: no '# BEGIN country rules' ... '# END country rules' block")
	}
	indent := string(out[loc[2]:loc[3]])
	var b bytes.Buffer
	b.Write(out[:loc[0]])
	fmt.Fprintf(&b, "%s# BEGIN country rules, written by go run ./infra/smsprotect from AllowedCountries: do not edit\n", indent)
	for _, c := range phoneregion.All() {
		status := "BLOCK"
		if slices.Contains(allowed, c) {
			status = "ALLOW"
		}
		// Quoted: YAML 1.1, which the SAM CLI reads, takes a bare NO (Norway) for false.
		fmt.Fprintf(&b, "%s- {CountryCode: %q, ProtectStatus: %s}\n", indent, c, status)
	}
	fmt.Fprintf(&b, "%s# END country rules", indent)
	b.Write(out[loc[1]:])
	return b.Bytes(), nil
}

// normalise upper-cases and checks the list: at least one country, each once, each one the
// metadata knows. Its order is kept (it is the parameter's text).
func normalise(countries []string) ([]string, error) {
	var out []string
	for _, c := range countries {
		c = strings.ToUpper(strings.TrimSpace(c))
		if c == "" {
			continue
		}
		if !(phoneregion.Regions{}).Supported(c) || slices.Contains(out, c) {
			return nil, fmt.Errorf("smsprotect: %q is not an ISO 3166-1 alpha-2 country with phone numbers, or is listed twice", c)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("smsprotect: the allow-list is empty: End User Messaging would block every country")
	}
	return out, nil
}
