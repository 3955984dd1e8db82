package alarmeval

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// FromCompositeAlarm converts a DescribeAlarms composite entry: an Alarm with Rule set.
func FromCompositeAlarm(c types.CompositeAlarm) Alarm {
	return Alarm{Name: aws.ToString(c.AlarmName), Rule: aws.ToString(c.AlarmRule), State: StateInsufficientData}
}

// EvaluateRule is a composite alarm's state under its AlarmRule, given its children's states
// by name: ALARM when the rule is true, else OK, as CloudWatch documents it. The rule language
// is CloudWatch's: ALARM(x), OK(x), INSUFFICIENT_DATA(x) (x a name, quoted or not, or an
// alarm ARN), TRUE, FALSE, NOT, AND, OR (NOT binds tightest, then AND) and parentheses. A child
// not in states is an error, never a silent FALSE.
func EvaluateRule(rule string, states map[string]State) (State, error) {
	p := &ruleParser{toks: ruleTokens(rule), states: states}
	v, err := p.or()
	if err == nil && p.at < len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.at])
	}
	if err != nil {
		return "", fmt.Errorf("alarmeval: alarm rule %q: %w", rule, err)
	}
	if v {
		return StateAlarm, nil
	}
	return StateOK, nil
}

func ruleTokens(rule string) []string {
	var toks []string
	for i := 0; i < len(rule); {
		c := rune(rule[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '(' || c == ')':
			toks = append(toks, string(c))
			i++
		case c == '"':
			j := strings.IndexByte(rule[i+1:], '"')
			if j < 0 {
				j = len(rule) - i - 1
			}
			toks = append(toks, rule[i:i+j+2])
			i += j + 2
		default:
			j := i
			for j < len(rule) && !unicode.IsSpace(rune(rule[j])) && rule[j] != '(' && rule[j] != ')' && rule[j] != '"' {
				j++
			}
			toks = append(toks, rule[i:j])
			i = j
		}
	}
	return toks
}

type ruleParser struct {
	toks   []string
	at     int
	states map[string]State
}

func (p *ruleParser) peek() string {
	if p.at < len(p.toks) {
		return p.toks[p.at]
	}
	return ""
}

func (p *ruleParser) or() (bool, error) {
	v, err := p.and()
	for err == nil && strings.EqualFold(p.peek(), "OR") {
		p.at++
		var w bool
		w, err = p.and()
		v = v || w
	}
	return v, err
}

func (p *ruleParser) and() (bool, error) {
	v, err := p.not()
	for err == nil && strings.EqualFold(p.peek(), "AND") {
		p.at++
		var w bool
		w, err = p.not()
		v = v && w
	}
	return v, err
}

func (p *ruleParser) not() (bool, error) {
	if strings.EqualFold(p.peek(), "NOT") {
		p.at++
		v, err := p.not()
		return !v, err
	}
	return p.primary()
}

func (p *ruleParser) primary() (bool, error) {
	tok := p.peek()
	p.at++
	switch strings.ToUpper(tok) {
	case "TRUE":
		return true, nil
	case "FALSE":
		return false, nil
	case "(":
		v, err := p.or()
		if err == nil && p.peek() != ")" {
			err = fmt.Errorf("missing )")
		}
		p.at++
		return v, err
	case string(StateAlarm), string(StateOK), string(StateInsufficientData):
		if p.at+2 >= len(p.toks) || p.toks[p.at] != "(" || p.toks[p.at+2] != ")" {
			return false, fmt.Errorf("%s needs (alarm)", tok)
		}
		name := strings.Trim(p.toks[p.at+1], `"`)
		if i := strings.LastIndex(name, ":alarm:"); i >= 0 {
			name = name[i+len(":alarm:"):]
		}
		p.at += 3
		st, ok := p.states[name]
		if !ok {
			return false, fmt.Errorf("no alarm %q", name)
		}
		return st == State(strings.ToUpper(tok)), nil
	}
	return false, fmt.Errorf("unexpected %q", tok)
}
