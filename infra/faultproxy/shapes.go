package faultproxy

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// errorAnswer is an AWS error in the protocol of the request it answers.
type errorAnswer struct {
	status      int
	header      http.Header
	body        []byte
	contentType string
}

// throttleAnswer is the service's throttling error: DynamoDB
// ProvisionedThroughputExceededException, S3 SlowDown, every other service
// ThrottlingException.
func throttleAnswer(c call) errorAnswer {
	switch c.service {
	case "dynamodb":
		return awsError(c, http.StatusBadRequest, "ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.")
	case "s3":
		return awsError(c, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	}
	return awsError(c, http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
}

// internalAnswer is a 500: InternalServerError, or InternalError in S3's and the query
// protocol's shape, as those services name it.
func internalAnswer(c call) errorAnswer {
	if c.proto == protoRESTXML || c.proto == protoQuery {
		return awsError(c, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	}
	return awsError(c, http.StatusInternalServerError, "InternalServerError", "Internal server error")
}

// awsError shapes an error with code and message as c's protocol does: awsJson 1.0 and 1.1 a
// JSON body with __type (DynamoDB's namespaced) and the X-Amzn-ErrorType header, the query
// protocol an ErrorResponse document, REST-XML an Error document, REST-JSON the header and a
// JSON message.
func awsError(c call, status int, code, message string) errorAnswer {
	id := requestID()
	h := http.Header{}
	h.Set("X-Amzn-RequestId", id)
	a := errorAnswer{status: status, header: h}
	switch c.proto {
	case protoJSON10, protoJSON11:
		typ := code
		switch c.service {
		case "dynamodb", "dynamodbstreams":
			typ = "com.amazonaws.dynamodb.v20120810#" + code
		case "sqs":
			typ = "com.amazonaws.sqs#" + code
			h.Set("X-Amzn-Query-Error", code+";"+senderOrReceiver(status))
		}
		h.Set("X-Amzn-ErrorType", code)
		a.contentType = "application/x-amz-json-1.1"
		if c.proto == protoJSON10 {
			a.contentType = "application/x-amz-json-1.0"
		}
		a.body, _ = json.Marshal(map[string]string{"__type": typ, "message": message})
	case protoQuery:
		a.contentType = "text/xml"
		a.body = fmt.Appendf(nil, `<?xml version="1.0"?><ErrorResponse><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
			senderOrReceiver(status), code, message, id)
	case protoRESTXML:
		h.Set("X-Amz-Request-Id", id)
		a.contentType = "application/xml"
		a.body = fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>%s</RequestId></Error>`, code, message, id)
	default:
		h.Set("X-Amzn-ErrorType", code)
		a.contentType = "application/json"
		a.body, _ = json.Marshal(map[string]string{"message": message})
	}
	return a
}

func senderOrReceiver(status int) string {
	if status >= 500 {
		return "Receiver"
	}
	return "Sender"
}

func (a errorAnswer) write(w http.ResponseWriter) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// requestID returns a request ID in the shape AWS's have.
func requestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
