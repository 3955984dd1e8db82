package alarmeval

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// mathSeries fetches a metric-math alarm's MetricStat queries and evaluates its expressions;
// the query with ReturnData true (or the only expression) is the alarm's series.
func (a Alarm) mathSeries(ctx context.Context, cw CloudWatchAPI, start, end time.Time, period time.Duration) ([]datapoint, error) {
	var stats []types.MetricDataQuery
	exprs := map[string]string{}
	var result string
	for _, q := range a.Metrics {
		id := aws.ToString(q.Id)
		returns := q.ReturnData
		switch {
		case q.MetricStat != nil:
			q.ReturnData = aws.Bool(true)
			stats = append(stats, q)
		case aws.ToString(q.Expression) != "":
			exprs[id] = aws.ToString(q.Expression)
		default:
			return nil, fmt.Errorf("alarmeval: %s: query %s has neither MetricStat nor Expression", a.Name, id)
		}
		// CloudWatch requires exactly one query of a math alarm to return data.
		if aws.ToBool(returns) {
			if result != "" {
				return nil, fmt.Errorf("alarmeval: %s: more than one query returns data (%s, %s)", a.Name, result, id)
			}
			result = id
		}
	}
	if result == "" && len(exprs) == 1 {
		for id := range exprs {
			result = id // ReturnData left out everywhere: the one expression
		}
	}
	if result == "" {
		return nil, fmt.Errorf("alarmeval: %s: no query returns data", a.Name)
	}
	values, err := fetch(ctx, cw, stats, start, end)
	if err != nil {
		return nil, fmt.Errorf("alarmeval: %s: %w", a.Name, err)
	}
	for _, q := range stats {
		if values[aws.ToString(q.Id)] == nil {
			values[aws.ToString(q.Id)] = series{}
		}
	}
	env := &mathEnv{values: values, exprs: exprs, busy: map[string]bool{}, start: start, end: end, period: period}
	s, err := env.lookup(result)
	if err != nil {
		return nil, fmt.Errorf("alarmeval: %s: %w", a.Name, err)
	}
	return s.points(), nil
}

// mathEnv evaluates expressions over fetched series; expressions may name each other.
type mathEnv struct {
	values     map[string]series
	exprs      map[string]string
	busy       map[string]bool
	start, end time.Time
	period     time.Duration
}

func (e *mathEnv) lookup(id string) (series, error) {
	if s, ok := e.values[id]; ok {
		return s, nil
	}
	expr, ok := e.exprs[id]
	if !ok {
		return nil, fmt.Errorf("unknown query id %q", id)
	}
	if e.busy[id] {
		return nil, fmt.Errorf("expression %s refers to itself", id)
	}
	e.busy[id] = true
	defer delete(e.busy, id)
	v, err := Eval(expr, e.lookupValue, e.start, e.end, e.period)
	if err != nil {
		return nil, fmt.Errorf("expression %s (%s): %w", id, expr, err)
	}
	s := v.asSeries(e.start, e.end, e.period)
	e.values[id] = s
	return s, nil
}

func (e *mathEnv) lookupValue(id string) (Value, error) {
	s, err := e.lookup(id)
	if err != nil {
		return Value{}, err
	}
	return Value{Series: s}, nil
}

// Value is a metric-math value: a time series, or a scalar when Series is nil.
type Value struct {
	Series series
	Scalar float64
}

// asSeries returns v as a series: a scalar has its value at every period of [start, end).
func (v Value) asSeries(start, end time.Time, period time.Duration) series {
	if v.Series != nil {
		return v.Series
	}
	s := series{}
	for t := start; t.Before(end); t = t.Add(period) {
		s[t.Unix()] = v.Scalar
	}
	return s
}

// Eval evaluates a metric-math expression; lookup resolves query ids. start, end and period
// give the timestamps FILL fills.
func Eval(expr string, lookup func(id string) (Value, error), start, end time.Time, period time.Duration) (Value, error) {
	p := &parser{src: expr, lookup: lookup, start: start, end: end, period: period}
	p.next()
	v, err := p.expr()
	if err != nil {
		return Value{}, err
	}
	if p.tok != "" {
		return Value{}, fmt.Errorf("unexpected %q", p.tok)
	}
	return v, nil
}

// parser is a recursive-descent parser of the supported subset of CloudWatch metric math.
type parser struct {
	src        string
	pos        int
	tok        string
	lookup     func(string) (Value, error)
	start, end time.Time
	period     time.Duration
}

func (p *parser) next() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
	if p.pos >= len(p.src) {
		p.tok = ""
		return
	}
	c := rune(p.src[p.pos])
	start := p.pos
	switch {
	case unicode.IsDigit(c) || c == '.':
		for p.pos < len(p.src) && (unicode.IsDigit(rune(p.src[p.pos])) || p.src[p.pos] == '.' || p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
			p.pos++
		}
	case unicode.IsLetter(c) || c == '_':
		for p.pos < len(p.src) && (unicode.IsLetter(rune(p.src[p.pos])) || unicode.IsDigit(rune(p.src[p.pos])) || p.src[p.pos] == '_') {
			p.pos++
		}
	default:
		p.pos++
	}
	p.tok = p.src[start:p.pos]
}

func (p *parser) expr() (Value, error) {
	v, err := p.term()
	if err != nil {
		return Value{}, err
	}
	for p.tok == "+" || p.tok == "-" {
		op := p.tok
		p.next()
		w, err := p.term()
		if err != nil {
			return Value{}, err
		}
		v = arith(op, v, w)
	}
	return v, nil
}

func (p *parser) term() (Value, error) {
	v, err := p.unary()
	if err != nil {
		return Value{}, err
	}
	for p.tok == "*" || p.tok == "/" {
		op := p.tok
		p.next()
		w, err := p.unary()
		if err != nil {
			return Value{}, err
		}
		v = arith(op, v, w)
	}
	return v, nil
}

func (p *parser) unary() (Value, error) {
	if p.tok == "-" {
		p.next()
		v, err := p.unary()
		if err != nil {
			return Value{}, err
		}
		return arith("*", Value{Scalar: -1}, v), nil
	}
	return p.primary()
}

func (p *parser) primary() (Value, error) {
	tok := p.tok
	switch {
	case tok == "":
		return Value{}, fmt.Errorf("unexpected end of expression")
	case tok == "(":
		p.next()
		v, err := p.expr()
		if err != nil {
			return Value{}, err
		}
		if p.tok != ")" {
			return Value{}, fmt.Errorf("missing )")
		}
		p.next()
		return v, nil
	case unicode.IsDigit(rune(tok[0])) || tok[0] == '.':
		f, err := strconv.ParseFloat(tok, 64)
		if err != nil {
			return Value{}, fmt.Errorf("bad number %q", tok)
		}
		p.next()
		return Value{Scalar: f}, nil
	case unicode.IsLetter(rune(tok[0])) || tok[0] == '_':
		p.next()
		if p.tok != "(" {
			return p.lookup(tok)
		}
		return p.call(strings.ToUpper(tok))
	}
	return Value{}, fmt.Errorf("unexpected %q", tok)
}

// call parses the arguments of the function name and applies it.
func (p *parser) call(name string) (Value, error) {
	p.next() // (
	var args []Value
	repeat := false
	for p.tok != ")" {
		if name == "FILL" && len(args) == 1 && strings.EqualFold(p.tok, "REPEAT") {
			repeat = true
			p.next()
		} else {
			v, err := p.expr()
			if err != nil {
				return Value{}, err
			}
			args = append(args, v)
		}
		if p.tok == "," {
			p.next()
			continue
		}
		if p.tok != ")" {
			return Value{}, fmt.Errorf("%s: expected , or )", name)
		}
	}
	p.next()
	switch name {
	case "ABS":
		if len(args) != 1 {
			return Value{}, fmt.Errorf("ABS takes one argument")
		}
		return mapValue(args[0], func(f float64) float64 {
			if f < 0 {
				return -f
			}
			return f
		}), nil
	case "FILL":
		if len(args) < 1 || (!repeat && len(args) != 2) || args[0].Series == nil {
			return Value{}, fmt.Errorf("FILL takes a series and a value or REPEAT")
		}
		return p.fill(args[0].Series, repeat, args), nil
	case "SUM", "AVG", "MIN", "MAX":
		if len(args) == 0 {
			return Value{}, fmt.Errorf("%s takes at least one argument", name)
		}
		return reduce(name, args), nil
	}
	return Value{}, fmt.Errorf("function %s is not supported by alarmeval", name)
}

// fill gives s a value at every period of the range: the last earlier value (REPEAT; the
// first later one before any) or args[1].
func (p *parser) fill(s series, repeat bool, args []Value) Value {
	out := series{}
	var last float64
	have := false
	var first float64
	firstSet := false
	for t := p.start; t.Before(p.end); t = t.Add(p.period) {
		if v, ok := s[t.Unix()]; ok && !firstSet {
			first, firstSet = v, true
		}
	}
	for t := p.start; t.Before(p.end); t = t.Add(p.period) {
		k := t.Unix()
		if v, ok := s[k]; ok {
			out[k], last, have = v, v, true
			continue
		}
		switch {
		case !repeat && args[1].Series != nil:
			if v, ok := args[1].Series[k]; ok {
				out[k] = v
			}
		case !repeat:
			out[k] = args[1].Scalar
		case have:
			out[k] = last
		case firstSet:
			out[k] = first
		}
	}
	return Value{Series: out}
}

func mapValue(v Value, f func(float64) float64) Value {
	if v.Series == nil {
		return Value{Scalar: f(v.Scalar)}
	}
	out := series{}
	for k, x := range v.Series {
		out[k] = f(x)
	}
	return Value{Series: out}
}

// arith applies op to two values: series with series keeps the timestamps both have.
func arith(op string, a, b Value) Value {
	f := func(x, y float64) float64 {
		switch op {
		case "+":
			return x + y
		case "-":
			return x - y
		case "*":
			return x * y
		}
		return x / y // CloudWatch drops the timestamps where this is not a number
	}
	switch {
	case a.Series == nil && b.Series == nil:
		return Value{Scalar: f(a.Scalar, b.Scalar)}
	case a.Series == nil:
		return mapValue(b, func(y float64) float64 { return f(a.Scalar, y) })
	case b.Series == nil:
		return mapValue(a, func(x float64) float64 { return f(x, b.Scalar) })
	}
	out := series{}
	for k, x := range a.Series {
		if y, ok := b.Series[k]; ok {
			out[k] = f(x, y)
		}
	}
	return Value{Series: out}
}

// reduce applies SUM, AVG, MIN or MAX elementwise across its arguments, at each timestamp over
// the arguments that have it (a scalar argument counts at every timestamp).
func reduce(name string, args []Value) Value {
	allScalar := true
	for _, a := range args {
		if a.Series != nil {
			allScalar = false
		}
	}
	combine := func(vals []float64) float64 {
		acc := vals[0]
		sum := 0.0
		for _, v := range vals {
			sum += v
			switch name {
			case "MIN":
				acc = min(acc, v)
			case "MAX":
				acc = max(acc, v)
			}
		}
		switch name {
		case "SUM":
			return sum
		case "AVG":
			return sum / float64(len(vals))
		}
		return acc
	}
	if allScalar {
		vals := make([]float64, len(args))
		for i, a := range args {
			vals[i] = a.Scalar
		}
		return Value{Scalar: combine(vals)}
	}
	keys := map[int64]bool{}
	for _, a := range args {
		for k := range a.Series {
			keys[k] = true
		}
	}
	out := series{}
	for k := range keys {
		var vals []float64
		for _, a := range args {
			if a.Series == nil {
				vals = append(vals, a.Scalar)
			} else if v, ok := a.Series[k]; ok {
				vals = append(vals, v)
			}
		}
		out[k] = combine(vals)
	}
	return Value{Series: out}
}
