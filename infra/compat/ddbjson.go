package compat

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemJSON encodes a DynamoDB item as DynamoDB JSON ({"name": {"S": "..."}}), the form a
// stream record's image takes.
func ItemJSON(item map[string]ddbtypes.AttributeValue) ([]byte, error) {
	img, err := Image(item)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(img, "", " ")
}

// Image converts a DynamoDB item to a stream image.
func Image(item map[string]ddbtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		sv, err := streamValue(v)
		if err != nil {
			return nil, fmt.Errorf("compat: attribute %s: %w", k, err)
		}
		out[k] = sv
	}
	return out, nil
}

func streamValue(v ddbtypes.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return events.NewStringAttribute(x.Value), nil
	case *ddbtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(x.Value), nil
	case *ddbtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(x.Value), nil
	case *ddbtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(x.Value), nil
	case *ddbtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *ddbtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(x.Value), nil
	case *ddbtypes.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(x.Value))
		for i, e := range x.Value {
			sv, err := streamValue(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, err
			}
			l[i] = sv
		}
		return events.NewListAttribute(l), nil
	case *ddbtypes.AttributeValueMemberM:
		m, err := Image(x.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("unsupported attribute value %T", v)
}

// ParseItem decodes DynamoDB JSON back into an item.
func ParseItem(raw []byte) (map[string]ddbtypes.AttributeValue, error) {
	var img map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal(raw, &img); err != nil {
		return nil, fmt.Errorf("compat: not DynamoDB JSON: %w", err)
	}
	return itemOf(img)
}

// ParseImage decodes DynamoDB JSON as a stream image.
func ParseImage(raw []byte) (map[string]events.DynamoDBAttributeValue, error) {
	var img map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal(raw, &img); err != nil {
		return nil, fmt.Errorf("compat: not DynamoDB JSON: %w", err)
	}
	return img, nil
}

func itemOf(img map[string]events.DynamoDBAttributeValue) (map[string]ddbtypes.AttributeValue, error) {
	out := make(map[string]ddbtypes.AttributeValue, len(img))
	for k, v := range img {
		av, err := itemValue(v)
		if err != nil {
			return nil, fmt.Errorf("compat: attribute %s: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

func itemValue(v events.DynamoDBAttributeValue) (ddbtypes.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &ddbtypes.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &ddbtypes.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &ddbtypes.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &ddbtypes.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &ddbtypes.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &ddbtypes.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeList:
		var l []ddbtypes.AttributeValue
		for _, e := range v.List() {
			av, err := itemValue(e)
			if err != nil {
				return nil, err
			}
			l = append(l, av)
		}
		return &ddbtypes.AttributeValueMemberL{Value: l}, nil
	case events.DataTypeMap:
		m, err := itemOf(v.Map())
		if err != nil {
			return nil, err
		}
		return &ddbtypes.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("unsupported stream value type %v", v.DataType())
}
