package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// indexOverhead is the bytes DynamoDB adds to each item of a secondary index when it sizes
// storage (the DynamoDB developer guide, "Item sizes and formats").
const indexOverhead = 100

// storagePerNotification scans table (uncounted) and returns the bytes its items and their
// index copies take per notification, by DynamoDB's sizing rules: attribute names plus values,
// and for each index an item is in, its projected attributes plus indexOverhead.
func storagePerNotification(ctx context.Context, db *dynamodb.Client, def *dynamodb.CreateTableInput, n int) (float64, error) {
	var total float64
	in := &dynamodb.ScanInput{TableName: def.TableName}
	for {
		page, err := db.Scan(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("storage: scan %s: %w", aws.ToString(def.TableName), err)
		}
		for _, it := range page.Items {
			total += float64(itemSize(it))
			for _, g := range def.GlobalSecondaryIndexes {
				total += float64(indexItemSize(it, def.KeySchema, g))
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return total / float64(n), nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// indexItemSize is the size of it's copy in index g, 0 when it lacks g's keys (sparse).
func indexItemSize(it map[string]ddbtypes.AttributeValue, tableKey []ddbtypes.KeySchemaElement, g ddbtypes.GlobalSecondaryIndex) int {
	keep := map[string]bool{}
	for _, k := range g.KeySchema {
		if _, ok := it[aws.ToString(k.AttributeName)]; !ok {
			return 0
		}
		keep[aws.ToString(k.AttributeName)] = true
	}
	for _, k := range tableKey {
		keep[aws.ToString(k.AttributeName)] = true
	}
	all := g.Projection != nil && g.Projection.ProjectionType == ddbtypes.ProjectionTypeAll
	if g.Projection != nil {
		for _, a := range g.Projection.NonKeyAttributes {
			keep[a] = true
		}
	}
	projected := map[string]ddbtypes.AttributeValue{}
	for name, v := range it {
		if all || keep[name] {
			projected[name] = v
		}
	}
	return itemSize(projected) + indexOverhead
}

// itemSize is an item's size as DynamoDB counts it: each attribute's name plus its value.
func itemSize(it map[string]ddbtypes.AttributeValue) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v ddbtypes.AttributeValue) int {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberB:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberN:
		// About one byte per two significant digits, plus one.
		return (len(strconv.Quote(x.Value))-2+1)/2 + 1
	case *ddbtypes.AttributeValueMemberBOOL, *ddbtypes.AttributeValueMemberNULL:
		return 1
	case *ddbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += len(k) + valueSize(e) + 1
		}
		return n
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += valueSize(e) + 1
		}
		return n
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, e := range x.Value {
			n += len(e)
		}
		return n
	}
	return 0
}
