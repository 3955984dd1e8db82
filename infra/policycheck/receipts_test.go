package policycheck_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// TestOnlyProviderEventsSubscribesToReceipts: the receipts topic carries destination numbers,
// so its policy denies sns:Subscribe to every principal for any endpoint but the
// provider-events function's alias and any protocol but lambda; and that function's own subscription
// (its SNS event) is one the policy lets through.
func TestOnlyProviderEventsSubscribesToReceipts(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		topic := resourcePolicy(tpl, "ReceiptsTopicPolicy", "PolicyDocument")
		denies := func(key string, want func(any) bool) bool {
			return slices.ContainsFunc(topic, func(s policycheck.Statement) bool {
				ne, _ := s.Condition["StringNotEquals"].(map[string]any)
				return s.Effect == "Deny" && s.Principal == "*" && s.Allows("sns:Subscribe") && len(s.Condition) == 1 &&
					len(ne) == 1 && policycheck.Ref(s.Resources[0]) == "ReceiptsTopic" && want(ne[key])
			})
		}
		if !denies("sns:Endpoint", func(v any) bool { return policycheck.Ref(v) == "ProviderEventsFunctionAliaslive" }) {
			t.Error("the receipts topic's policy does not deny sns:Subscribe for every endpoint but ProviderEventsFunction's alias")
		}
		if !denies("sns:Protocol", func(v any) bool { return v == "lambda" }) {
			t.Error("the receipts topic's policy does not deny sns:Subscribe for every protocol but lambda")
		}
		var subs int
		for name, r := range tpl.Resources {
			if r.Type != "AWS::SNS::Subscription" || policycheck.Ref(r.Properties["TopicArn"]) != "ReceiptsTopic" {
				continue
			}
			subs++
			if r.Properties["Protocol"] != "lambda" || policycheck.Ref(r.Properties["Endpoint"]) != "ProviderEventsFunctionAliaslive" {
				t.Errorf("%s subscribes %v by %v to the receipts topic", name, r.Properties["Endpoint"], r.Properties["Protocol"])
			}
		}
		if subs != 1 {
			t.Errorf("%d subscriptions to the receipts topic, want provider-events' one", subs)
		}
	})
}

// TestOnlyTheSmsServicePublishesReceipts: a forged "delivered" would settle a record and land
// in the audit trail, so the receipts topic's policy denies sns:Publish to every caller that
// is not End User Messaging SMS, not on behalf of this account, or not from this account's
// configuration set (the stack's SmsConfigurationSet when set).
func TestOnlyTheSmsServicePublishesReceipts(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		topic := resourcePolicy(tpl, "ReceiptsTopicPolicy", "PolicyDocument")
		denies := func(op, key string, want func(any) bool) bool {
			return slices.ContainsFunc(topic, func(s policycheck.Statement) bool {
				c, _ := s.Condition[op].(map[string]any)
				return s.Effect == "Deny" && s.Principal == "*" && s.Allows("sns:Publish") && len(s.Condition) == 1 &&
					len(c) == 1 && want(c[key])
			})
		}
		if !denies("StringNotEquals", "aws:PrincipalServiceName", func(v any) bool { return v == "sms-voice.amazonaws.com" }) {
			t.Error("the receipts topic's policy does not deny sns:Publish to every caller but sms-voice.amazonaws.com")
		}
		if !denies("StringNotEquals", "aws:SourceAccount", func(v any) bool { return policycheck.Ref(v) == "AWS::AccountId" }) {
			t.Error("the receipts topic's policy does not deny sns:Publish on behalf of another account")
		}
		want := `{"Fn::If":["HasSmsConfigurationSet",{"Fn::Sub":"arn:${AWS::Partition}:sms-voice:${AWS::Region}:${AWS::AccountId}:configuration-set/${SmsConfigurationSet}"},{"Fn::Sub":"arn:${AWS::Partition}:sms-voice:${AWS::Region}:${AWS::AccountId}:configuration-set/*"}]}`
		if !denies("ArnNotLike", "aws:SourceArn", func(v any) bool { b, _ := json.Marshal(v); return string(b) == want }) {
			t.Errorf("the receipts topic's policy does not deny sns:Publish from any source but this account's configuration set %s", want)
		}
	})
}
