package faultproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxDelaySeconds is SQS's most DelaySeconds.
const maxDelaySeconds = 900

// isSQSSend reports whether c sends SQS messages.
func isSQSSend(c call) bool {
	return c.service == "sqs" && (c.operation == "SendMessage" || c.operation == "SendMessageBatch")
}

// isConditionalWrite reports whether c is a DynamoDB single-item write (the only ones
// KindNoCondition rewrites).
func isConditionalWrite(c call) bool {
	return c.service == "dynamodb" && (c.operation == "PutItem" || c.operation == "UpdateItem" || c.operation == "DeleteItem") &&
		bytes.Contains(c.body, []byte(`"ConditionExpression"`))
}

// delaySeconds turns d into whole seconds, at least 1.
func delaySeconds(d time.Duration) int {
	return max(int((d+time.Second-1)/time.Second), 1)
}

// addDelay returns c's body with d added to the DelaySeconds of the message, or of every entry
// of the batch, capped at SQS's 900.
func addDelay(c call, d time.Duration) ([]byte, error) {
	add := delaySeconds(d)
	if c.proto == protoQuery {
		v, err := url.ParseQuery(string(c.body))
		if err != nil {
			return nil, err
		}
		if c.operation == "SendMessage" {
			v.Set("DelaySeconds", strconv.Itoa(min(atoi(v.Get("DelaySeconds"))+add, maxDelaySeconds)))
		} else {
			for k := range v {
				if prefix, ok := strings.CutSuffix(k, ".Id"); ok && strings.HasPrefix(prefix, "SendMessageBatchRequestEntry.") {
					dk := prefix + ".DelaySeconds"
					v.Set(dk, strconv.Itoa(min(atoi(v.Get(dk))+add, maxDelaySeconds)))
				}
			}
		}
		return []byte(v.Encode()), nil
	}
	m, err := decodeObject(c.body)
	if err != nil {
		return nil, err
	}
	bump := func(o map[string]any) {
		cur := 0
		if n, ok := o["DelaySeconds"].(json.Number); ok {
			cur = atoi(n.String())
		}
		o["DelaySeconds"] = min(cur+add, maxDelaySeconds)
	}
	if c.operation == "SendMessage" {
		bump(m)
	} else {
		entries, _ := m["Entries"].([]any)
		for _, e := range entries {
			if o, ok := e.(map[string]any); ok {
				bump(o)
			}
		}
	}
	return json.Marshal(m)
}

// noConditionName is the attribute KindNoCondition's condition asks to be absent; no item has it.
const noConditionName = "faultproxy_no_such_attribute"

// dropCondition returns c's body with its ConditionExpression OR-ed with
// attribute_not_exists of an attribute no item has, so that it always holds while every
// placeholder of the original stays in use (DynamoDB refuses unused ones).
func dropCondition(c call) ([]byte, error) {
	m, err := decodeObject(c.body)
	if err != nil {
		return nil, err
	}
	cond, _ := m["ConditionExpression"].(string)
	if cond == "" {
		return c.body, nil
	}
	names, _ := m["ExpressionAttributeNames"].(map[string]any)
	if names == nil {
		names = map[string]any{}
	}
	names["#faultproxyNone"] = noConditionName
	m["ExpressionAttributeNames"] = names
	m["ConditionExpression"] = "(" + cond + ") OR attribute_not_exists(#faultproxyNone)"
	return json.Marshal(m)
}

func decodeObject(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
